#include <gtest/gtest.h>

#include "hetrt/base/dtype.h"
#include "hetrt/base/tensor.h"
#include "test_support.h"

namespace hetrt {
namespace {

TEST(DataType, ParsesAndPrintsTvmNames) {
  struct Case {
    const char* text;
    DLDataType type;
  };
  const Case cases[] = {
      {"float32", {kDLFloat, 32, 1}},
      {"int8", {kDLInt, 8, 1}},
      {"uint8", {kDLUInt, 8, 1}},
      {"int64", {kDLInt, 64, 1}},
      {"float16", {kDLFloat, 16, 1}},
      {"bfloat16", {kDLBfloat, 16, 1}},
      {"float32x4", {kDLFloat, 32, 4}},
      {"bool", {kDLUInt, 1, 1}},
      {"handle", {kDLOpaqueHandle, 64, 1}},
      {"complex64", {kDLComplex, 64, 1}},
      {"complex128x2", {kDLComplex, 128, 2}},
  };
  for (const Case& c : cases) {
    HETRT_ASSERT_OK_AND_ASSIGN(DLDataType parsed, ParseDataType(c.text));
    EXPECT_EQ(parsed, c.type) << c.text;
    EXPECT_EQ(DataTypeToString(c.type), c.text);
  }
}

TEST(DataType, RejectsMalformedNamesWithTheText) {
  for (const char* text : {"", "float", "floaty32", "int0", "int300", "float32x", "float32x0", "x4"}) {
    auto parsed = ParseDataType(text);
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_NE(parsed.status().message().find(std::string("'") + text + "'"), std::string::npos)
        << parsed.status().message();
  }
}

// TVM writes these (tensor caches of FP8 models); DLPack 0.6 has no code for them.
TEST(DataType, SmallFloatFormatsAreNamedAsUnsupported) {
  for (const char* text : {"float8_e4m3fn", "float8_e5m2", "float4_e2m1fn"}) {
    auto parsed = ParseDataType(text);
    ASSERT_EQ(parsed.status().code(), StatusCode::kUnimplemented) << text;
    EXPECT_NE(parsed.status().message().find("float formats"), std::string::npos) << parsed.status().message();
    EXPECT_NE(parsed.status().message().find(text), std::string::npos) << parsed.status().message();
  }
}

TEST(DataType, BytesIncludeLanes) {
  EXPECT_EQ(DataTypeBytes({kDLFloat, 32, 4}), 16u);
  EXPECT_EQ(DataTypeBytes({kDLUInt, 1, 1}), 1u);
}

TEST(Device, ParsesNamesAndIndices) {
  HETRT_ASSERT_OK_AND_ASSIGN(DLDevice cpu, ParseDevice("cpu"));
  EXPECT_EQ(cpu.device_type, kDLCPU);
  EXPECT_EQ(cpu.device_id, 0);
  HETRT_ASSERT_OK_AND_ASSIGN(DLDevice cl, ParseDevice("opencl:1"));
  EXPECT_EQ(cl.device_type, kDLOpenCL);
  EXPECT_EQ(cl.device_id, 1);
  EXPECT_FALSE(ParseDevice("tpu").ok());
  EXPECT_FALSE(ParseDevice("cpu:x").ok());
}

TEST(Tensor, OwningTensorIsAlignedAndViewsShareMemory) {
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor t, Tensor::EmptyHost({2, 3}, {kDLFloat, 32, 1}));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data()) % 64, 0u);
  EXPECT_EQ(t.nbytes(), 24u);
  EXPECT_EQ(t.dl()->ndim, 2);
  EXPECT_EQ(t.dl()->shape[1], 3);
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor v, t.View({6}, {kDLFloat, 32, 1}));
  v.data_as<float>()[5] = 7.f;
  EXPECT_EQ(t.data_as<float>()[5], 7.f);
  Tensor copy = v;  // the copy's DLTensor must point at its own shape
  EXPECT_EQ(copy.dl()->shape, copy.shape().data());
  EXPECT_EQ(copy.dl()->shape[0], 6);
  EXPECT_FALSE(t.View({7}, {kDLFloat, 32, 1}).ok());
}

TEST(Tensor, ZeroDimensionalTensorHasOneElement) {
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor t, Tensor::EmptyHost({}, {kDLFloat, 32, 1}));
  EXPECT_EQ(t.dl()->ndim, 0);
  EXPECT_EQ(t.num_elements(), 1);
  EXPECT_EQ(t.nbytes(), 4u);
}

TEST(Tensor, BorrowDoesNotOwn) {
  float data[4] = {1, 2, 3, 4};
  Tensor t = Tensor::Borrow(data, {kDLCPU, 0}, {4}, {kDLFloat, 32, 1});
  EXPECT_EQ(t.data(), data);
  EXPECT_EQ(t.data_as<float>()[2], 3.f);
}

TEST(Tensor, RejectsNegativeAndOverflowingShapes) {
  EXPECT_FALSE(Tensor::EmptyHost({-1}, {kDLFloat, 32, 1}).ok());
  EXPECT_FALSE(Tensor::EmptyHost({1LL << 40, 1LL << 40}, {kDLFloat, 32, 1}).ok());
}

}  // namespace
}  // namespace hetrt
