// The CUDA plugin's parts that need no driver, checked for real everywhere:
// PTX / cubin / fatbin images, launch geometry from tags, argument widths,
// TVM's blob read and written byte for byte, malformed blobs.
#include <cstring>

#include "cuda_test_support.h"
#include "hetrt/sdk/byte_stream.h"

namespace hetrt::cuda_testing {
namespace {

using cuda::ImageKind;
// ------------------------------------------------------------ image kinds

TEST(CudaFormat, TellsPtxCubinAndFatbinApart) {
  EXPECT_EQ(cuda::DetectImage(Bytes(Ptx("k"))), ImageKind::kPtx);
  EXPECT_EQ(cuda::DetectImage(Bytes("  \n.version 7.0\n.target sm_70\n")), ImageKind::kPtx);
  EXPECT_EQ(cuda::DetectImage(Bytes("\x7f"
                                    "ELF\x02\x01\x01\x33")),
            ImageKind::kCubin);
  const std::vector<uint8_t> fatbin = {0x50, 0xed, 0x55, 0xba, 0x01, 0x00, 0x10, 0x00};
  EXPECT_EQ(cuda::DetectImage(fatbin), ImageKind::kFatbin);
  // Not images: empty, binary junk, text that is not PTX, PTX with a NUL inside.
  EXPECT_EQ(cuda::DetectImage({}), ImageKind::kUnknown);
  EXPECT_EQ(cuda::DetectImage(Bytes("\x01\x02\x03\x04\x05")), ImageKind::kUnknown);
  EXPECT_EQ(cuda::DetectImage(Bytes("// just a comment\n")), ImageKind::kUnknown);
  EXPECT_EQ(cuda::DetectImage(Bytes("__kernel void f() {}")), ImageKind::kUnknown);
  EXPECT_EQ(cuda::DetectImage(Bytes(std::string("//\n.version 8.0\n\0", 17))), ImageKind::kUnknown);
  EXPECT_STREQ(cuda::ImageKindName(ImageKind::kFatbin), "fatbin");
}

TEST(CudaFormat, PtxDirectivesAndFatbinEntriesAreDescribed) {
  const std::string ptx = "// .version 1.0 in a comment\n\t.version   9.0\n.target sm_75, debug\n";
  EXPECT_EQ(cuda::PtxDirective(ptx, ".version"), "9.0");
  EXPECT_EQ(cuda::PtxDirective(ptx, ".target"), "sm_75");
  EXPECT_EQ(cuda::PtxDirective(ptx, ".address_size"), "");
  EXPECT_EQ(cuda::DescribeImage(Bytes(ptx)), "PTX 9.0 for sm_75");
  // A fatbin of two entries: compute_75 PTX and sm_90 code.
  ByteWriter w;
  w.WritePod<uint32_t>(cuda::kFatbinMagic), w.WritePod<uint16_t>(1), w.WritePod<uint16_t>(16);
  w.WriteU64(2 * (64 + 8));
  for (auto [kind, arch] : {std::pair<uint16_t, uint32_t>{1, 75}, {2, 90}}) {
    std::vector<uint8_t> header(64, 0);
    std::memcpy(&header[0], &kind, 2);
    const uint32_t header_size = 64;
    const uint64_t payload = 8;
    std::memcpy(&header[4], &header_size, 4);
    std::memcpy(&header[8], &payload, 8);
    std::memcpy(&header[28], &arch, 4);
    w.WriteBytes(header);
    w.WriteU64(0);  // the payload
  }
  EXPECT_EQ(cuda::DescribeImage(w.Take()), "fatbin: compute_75 PTX, sm_90 cubin");
  EXPECT_EQ(cuda::DescribeImage(Bytes("\x01\x02")), "unknown (first bytes 01 02)");
}

TEST(CudaFormat, FixtureImagesAreFatbinsForSm80) {
  for (const char* model : kCudaFixtures) {
    HETRT_REQUIRE_FIXTURE(dir, model);
    const auto bytes = CudaModuleBytesIn(ReadFile(dir + "/deploy.so"));
    ASSERT_FALSE(bytes.empty()) << model;
    cuda::ModuleBlob blob;
    uint64_t consumed = 0;
    ASSERT_EQ(cuda::ParseModuleBlob(bytes, &blob, &consumed), "");
    EXPECT_EQ(blob.fmt, "cubin");  // TVM's label for nvcc's fatbin
    const std::span<const uint8_t> image(reinterpret_cast<const uint8_t*>(blob.data.data()), blob.data.size());
    EXPECT_EQ(cuda::DetectImage(image), ImageKind::kFatbin);
    EXPECT_EQ(cuda::DescribeImage(image), "fatbin: sm_80 cubin") << model;
  }
}

// ------------------------------------------------------------ launch geometry

std::vector<hetrt_value_t> Values(std::initializer_list<int64_t> v) {
  std::vector<hetrt_value_t> out;
  for (int64_t x : v) out.push_back({.v_int64 = x});
  return out;
}

TEST(CudaFormat, LaunchGeometryComesFromTheTagsAndTheirValues) {
  cuda::LaunchTags tags;
  // mlp_cuda's dense kernels: blockIdx.y, blockIdx.x, threadIdx.x.
  ASSERT_EQ(cuda::ParseLaunchTags({"blockIdx.y", "blockIdx.x", "threadIdx.x"}, &tags), "");
  EXPECT_EQ(tags.num_launch_args(), 3);
  cuda::LaunchGeometry g;
  auto v = Values({4, 10, 64});
  ASSERT_EQ(cuda::ComputeGeometry(tags, v.data(), &g), "");
  EXPECT_EQ(g.grid, (std::array<uint32_t, 3>{10, 4, 1}));
  EXPECT_EQ(g.block, (std::array<uint32_t, 3>{64, 1, 1}));
  EXPECT_EQ(g.dynamic_shared_bytes, 0u);
  EXPECT_EQ(cuda::DescribeGeometry(g), "grid (10, 4, 1), block (64, 1, 1), 0 bytes of dynamic shared memory");
  // Values <= 0 leave the dimension at 1 (dynamic shapes can give 0), as TVM does.
  v = Values({0, -3, 32});
  ASSERT_EQ(cuda::ComputeGeometry(tags, v.data(), &g), "");
  EXPECT_EQ(g.grid, (std::array<uint32_t, 3>{1, 1, 1}));
  EXPECT_EQ(g.block[0], 32u);
  // Every axis, and the dynamic shared memory size after the tags.
  ASSERT_EQ(cuda::ParseLaunchTags({"blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y",
                                   "threadIdx.z", "tir.use_dyn_shared_memory"},
                                  &tags),
            "");
  EXPECT_TRUE(tags.dynamic_shared_memory);
  EXPECT_EQ(tags.num_launch_args(), 7);
  v = Values({2, 3, 4, 8, 4, 2, 65536});
  ASSERT_EQ(cuda::ComputeGeometry(tags, v.data(), &g), "");
  EXPECT_EQ(g.grid, (std::array<uint32_t, 3>{2, 3, 4}));
  EXPECT_EQ(g.block, (std::array<uint32_t, 3>{8, 4, 2}));
  EXPECT_EQ(g.dynamic_shared_bytes, 65536u);
  // What the driver could not take, and tags TVM never writes.
  v = Values({int64_t{1} << 32, 1, 1, 1, 1, 1, 0});
  EXPECT_NE(cuda::ComputeGeometry(tags, v.data(), &g).find("blockIdx.x = 4294967296 exceeds"), std::string::npos);
  v = Values({1, 1, 1, 1, 1, 1, -1});
  EXPECT_NE(cuda::ComputeGeometry(tags, v.data(), &g).find("dynamic shared memory of -1 bytes"), std::string::npos);
  EXPECT_NE(cuda::ParseLaunchTags({"tir.use_dyn_shared_memory", "threadIdx.x"}, &tags).find("must be the last"),
            std::string::npos);
  EXPECT_NE(cuda::ParseLaunchTags({"vthread"}, &tags).find("unknown launch tag 'vthread'"), std::string::npos);
  EXPECT_NE(cuda::ParseLaunchTags({"threadIdx.w"}, &tags).find("unknown launch tag"), std::string::npos);
}

// ------------------------------------------------------------ argument packing

TEST(CudaFormat, ArgumentsAreNarrowedToTheWidthsOfTheFunctionInfo) {
  cuda::ArgPlan plan;
  ASSERT_EQ(cuda::PlanArguments({kHandle, kI32, kU32, kI64, kF32, kF64}, &plan), "");
  std::vector<uint32_t> widths;
  for (auto c : plan.conversions) widths.push_back(cuda::ArgWidth(c));
  EXPECT_EQ(widths, (std::vector<uint32_t>{8, 4, 4, 8, 4, 8}));
  EXPECT_EQ(plan.num_handles, 1);

  int device_buffer = 0;
  hetrt_value_t args[6] = {{.v_handle = &device_buffer},  {.v_int64 = -5},    {.v_int64 = 0xfffffffeLL},
                           {.v_int64 = int64_t{1} << 40}, {.v_float64 = 1.5}, {.v_float64 = 0.1}};
  int32_t codes[6] = {HETRT_TYPE_HANDLE, HETRT_TYPE_INT,   HETRT_TYPE_INT,
                      HETRT_TYPE_INT,    HETRT_TYPE_FLOAT, HETRT_TYPE_FLOAT};
  uint64_t slots[6];
  void* params[6];
  ASSERT_EQ(cuda::PackArguments(plan, args, codes, slots, params), -1);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(params[i], &slots[i]);
  void* handle = nullptr;
  std::memcpy(&handle, params[0], 8);
  EXPECT_EQ(handle, &device_buffer);
  // int32 and float32 occupy the first 4 bytes of their slot; the rest is zero.
  int32_t i32 = 0;
  uint32_t u32 = 0, high = 1;
  std::memcpy(&i32, params[1], 4);
  std::memcpy(&high, static_cast<uint8_t*>(params[1]) + 4, 4);
  EXPECT_EQ(i32, -5);
  EXPECT_EQ(high, 0u);
  std::memcpy(&u32, params[2], 4);
  EXPECT_EQ(u32, 0xfffffffeu);
  int64_t i64 = 0;
  std::memcpy(&i64, params[3], 8);
  EXPECT_EQ(i64, int64_t{1} << 40);
  float f32 = 0;
  std::memcpy(&f32, params[4], 4);
  EXPECT_EQ(f32, 1.5f);
  double f64 = 0;
  std::memcpy(&f64, params[5], 8);
  EXPECT_EQ(f64, 0.1);
  // A NULL buffer may come as code 4; a float where an int is due may not.
  codes[0] = HETRT_TYPE_NULL;
  args[0].v_handle = nullptr;
  EXPECT_EQ(cuda::PackArguments(plan, args, codes, slots, params), -1);
  codes[0] = HETRT_TYPE_DLTENSOR;  // a DLTensor* is not a device pointer
  EXPECT_EQ(cuda::PackArguments(plan, args, codes, slots, params), 0);
  codes[0] = HETRT_TYPE_HANDLE;
  codes[1] = HETRT_TYPE_FLOAT;
  EXPECT_EQ(cuda::PackArguments(plan, args, codes, slots, params), 1);
  // Types TVM does not pass to kernels.
  EXPECT_NE(cuda::PlanArguments({kHandle, {kDLFloat, 32, 4}}, &plan).find("argument 1: vector types (lanes 4)"),
            std::string::npos);
  EXPECT_NE(cuda::PlanArguments({{kDLFloat, 16, 1}}, &plan).find("type code 2 with 16 bits"), std::string::npos);
  EXPECT_NE(cuda::PlanArguments({{kDLInt, 8, 1}}, &plan).find("cannot be passed"), std::string::npos);
}

// ------------------------------------------------------------ the blob

TEST(CudaFormat, BlobsKeepMapOrderAndFunctionInfoNamesAndEndWhereTheyEnd) {
  FunctionSpec b{"b_kernel", {kHandle, kI32}, {"blockIdx.x", "threadIdx.x", "tir.use_dyn_shared_memory"}, "kept"};
  FunctionSpec a{"a_kernel", {kHandle, kHandle, kF32}};
  const auto bytes = CudaBlob("ptx", {b, a}, Ptx("a_kernel") + Ptx("b_kernel"));
  cuda::ModuleBlob blob;
  uint64_t consumed = 0;
  auto trailing = bytes;
  trailing.push_back(0x42);  // the next module's bytes are not this one's
  ASSERT_EQ(cuda::ParseModuleBlob(trailing, &blob, &consumed), "");
  EXPECT_EQ(consumed, bytes.size());
  ASSERT_EQ(blob.functions.size(), 2u);
  EXPECT_EQ(blob.functions[0].first, "b_kernel");
  EXPECT_EQ(blob.functions[0].second.name, "kept");
  EXPECT_EQ(blob.functions[0].second.launch_param_tags.back(), "tir.use_dyn_shared_memory");
  EXPECT_EQ(blob.functions[1].second.arg_types.size(), 3u);
  EXPECT_EQ(blob.functions[1].second.arg_types[2].bits, 32);
  EXPECT_EQ(cuda::SerializeModuleBlob(blob), bytes);
}

TEST(CudaFormat, FixtureBlobsRoundTripByteForByte) {
  int checked = 0;
  for (const char* model : kCudaFixtures) {
    HETRT_REQUIRE_FIXTURE(dir, model);
    for (const std::string& file : testing::FixtureLibraries(dir)) {
      SCOPED_TRACE(file);
      const auto bytes = CudaModuleBytesIn(ReadFile(file));
      ASSERT_FALSE(bytes.empty());
      cuda::ModuleBlob blob;
      uint64_t consumed = 0;
      ASSERT_EQ(cuda::ParseModuleBlob(bytes, &blob, &consumed), "");
      EXPECT_EQ(cuda::SerializeModuleBlob(blob), bytes);
      // The same through the core's loader and the plugin's module table.
      LoadOptions options;
      options.keep_unloadable = true;
      HETRT_ASSERT_OK_AND_ASSIGN(auto root, LoadModuleFile(file, options));
      const std::vector<const Module*> found = testing::ModulesOfType(*root, "cuda");
      ASSERT_EQ(found.size(), 1u);
      EXPECT_NE(dynamic_cast<const PluginModule*>(found[0]), nullptr) << "the CUDA plugin did not load the module";
      HETRT_ASSERT_OK_AND_ASSIGN(auto saved, found[0]->SaveToBinary());
      EXPECT_EQ(saved, bytes);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 4);
}

TEST(CudaFormat, MalformedBlobsAreRefusedWithTheReason) {
  HETRT_REQUIRE_FIXTURE(dir, "hetero_cuda_seed");
  const auto good = CudaModuleBytesIn(ReadFile(dir + "/deploy.so"));
  ASSERT_FALSE(good.empty());
  // Every truncation is refused, never read past.
  for (size_t n = 0; n < good.size(); ++n) {
    cuda::ModuleBlob blob;
    uint64_t consumed = 0;
    EXPECT_NE(cuda::ParseModuleBlob({good.data(), n}, &blob, &consumed), "") << n << " bytes";
  }
  struct Case {
    std::vector<uint8_t> blob;
    std::string message;
  };
  ByteWriter huge;
  huge.WriteString("cubin");
  huge.WriteU64(uint64_t{1} << 60);
  const FunctionSpec f{"f", {kHandle}};
  const std::string ptx = Ptx("f");
  const Case cases[] = {
      {huge.Take(), "function count does not fit the blob"},
      {CudaBlob("ptx", {f, f}, ptx), "function 'f' listed twice"},
      {CudaBlob("ptx", {{"", {kHandle}}}, ptx), "missing or empty name"},
      {CudaBlob("spirv", {f}, ptx), "CUDA module format 'spirv' (hetrt loads ptx, cubin and fatbin)"},
      {CudaBlob("cubin", {f}, "garbage"), "neither PTX text, a cubin (ELF) nor a fatbin"},
      {CudaBlob("ptx", {f}, std::string("\x50\xed\x55\xba\x01\x00\x10\x00", 8)), "format 'ptx' but the data is fatbin"},
      {CudaBlob("cubin", {f}, ptx), "format 'cubin' but the data is PTX 8.0 for sm_75"},
      {CudaBlob("ptx", {{"f", {kHandle}, {"blockIdx.q"}}}, ptx), "kernel 'f': unknown launch tag 'blockIdx.q'"},
      {CudaBlob("ptx", {{"f", {{kDLFloat, 32, 4}}}}, ptx), "CUDA kernel 'f': argument 0: vector types"},
  };
  for (const Case& c : cases) {
    auto m = LoadCudaBlob(c.blob);
    ASSERT_FALSE(m.ok()) << c.message;
    EXPECT_NE(m.status().message().find(c.message), std::string::npos) << m.status().message();
  }
}

}  // namespace
}  // namespace hetrt::cuda_testing
