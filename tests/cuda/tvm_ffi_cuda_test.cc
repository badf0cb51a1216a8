// A TVM v0.22+ model library whose device module is CUDA (docs/tvm-ffi.md
// (b), (e)): the exporter writes the kernel set's PTX in v0.22's payload form
// (arg_extra_tags per function), the loader converts it for the CUDA plugin,
// and host code in v0.22's shape (tests/kernels/ffi_model_host.c) finds the
// kernel through the library context and launches it with tvm-ffi values.
// On a GPU, or on the fake driver (fake_driver.*).
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "cuda_test_support.h"
#include "hetrt/formats/device_payloads.h"
#include "hetrt/module/kernel_library.h"
#include "hetrt/module/module.h"
#include "hetrt/relax/vm.h"
#include "kernel_set.h"
#include "tvm_ffi_model_support.h"

namespace hetrt::cuda_testing {
namespace {

Tensor Floats(const std::vector<float>& values) {
  Tensor t = Tensor::EmptyHost({static_cast<int64_t>(values.size())}, kF32).value();
  std::memcpy(t.data(), values.data(), values.size() * sizeof(float));
  return t;
}

TEST_F(CudaDevice, AV022LibraryLaunchesItsCudaKernelFoundThroughTheLibraryContext) {
  HETRT_REQUIRE_CUDA_KERNEL_SET(*Cu(), kCu);
  HETRT_ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> payload, kernels::CudaModuleBytes());
  const std::string path = ::testing::TempDir() + "/hetrt_ffi_cuda_" + std::to_string(getpid()) + ".so";
  HETRT_ASSERT_OK(
      testing::ExportFfiModel(testing::DeviceAddExecutable("add_with_kernel_set"), path, {std::make_shared<UnloadedModule>("cuda", payload, OkStatus())}));

  // The file holds the payload in v0.22's form, which the plugin could not read as it is.
  HETRT_ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> v022, DevicePayloadToFfiForm("cuda", payload, true, path));
  const std::vector<uint8_t> file = ReadFile(path);
  EXPECT_NE(std::search(file.begin(), file.end(), v022.begin(), v022.end()), file.end());

  HETRT_ASSERT_OK_AND_ASSIGN(std::shared_ptr<Module> root, LoadModuleFile(path));
  const Module& library = *root->imports().at(0);
  ASSERT_EQ(library.imports().size(), 1u);
  EXPECT_EQ(library.imports()[0]->type_key(), "cuda");

  RelaxVirtualMachine::Options options;
  options.devices = {kCu, {kDLCPU, 0}};
  HETRT_ASSERT_OK_AND_ASSIGN(auto vm, RelaxVirtualMachine::Create(root, options));
  PluginRegistry& registry = PluginRegistry::Global();
  std::vector<RelaxValue> args;
  constexpr int kN = 1000;
  std::vector<float> a(kN), b(kN), expected(kN);
  for (int i = 0; i < kN; ++i) a[i] = 0.5f * i, b[i] = 1000.0f - i, expected[i] = a[i] + b[i];
  for (const std::vector<float>* values : {&a, &b, &expected}) {
    HETRT_ASSERT_OK_AND_ASSIGN(Tensor t, Tensor::Empty({kN}, kF32, Cu()->DeviceAllocator(kCu)));
    HETRT_ASSERT_OK(registry.CopyTensor(Floats(values == &expected ? std::vector<float>(kN, -1) : *values), t));
    args.push_back(RelaxValue::FromTensor(t));
  }
  for (int run = 0; run < 2; ++run) {  // the second through the host code's cached lookups
    HETRT_ASSERT_OK(vm->Invoke("main", args).status());
    HETRT_ASSERT_OK(vm->Synchronize());
    HETRT_ASSERT_OK_AND_ASSIGN(Tensor c, registry.ToHost(args[2].tensor()));
    ASSERT_EQ(std::memcmp(c.data(), expected.data(), kN * sizeof(float)), 0) << "run " << run;
  }
  vm.reset();
  root.reset();
  std::remove(path.c_str());
}

// A foreign kernel's TVMFFIEnvGetStream is the CUstream behind hetrt's current
// stream: the plugin's default stream is non-blocking, so a kernel on the
// legacy NULL stream would not be ordered after hetrt's work.
TEST_F(CudaDevice, ForeignKernelsAreGivenTheCurrentStreamsCuStream) {
  HETRT_ASSERT_OK_AND_ASSIGN(auto library, KernelLibrary::Open(HETRT_TEST_KERNELS_DIR "/libffi_stream_kernels.so"));
  HETRT_ASSERT_OK_AND_ASSIGN(Kernel stream_of, library->Find("stream_of"));
  auto kernels_stream = [&] {
    return std::get<int64_t>(stream_of.Call(std::vector<FfiValue>{int64_t{kDLCUDA}, int64_t{0}}).value());
  };
  const Device device(Cu(), kCu);
  HETRT_ASSERT_OK_AND_ASSIGN(void* default_stream, device.CurrentNativeStream());
  ASSERT_NE(default_stream, nullptr);
  EXPECT_EQ(kernels_stream(), reinterpret_cast<intptr_t>(default_stream));
  HETRT_ASSERT_OK_AND_ASSIGN(hetrt_stream_t * stream, device.NewStream());
  HETRT_ASSERT_OK(device.SetCurrentStream(stream));
  HETRT_ASSERT_OK_AND_ASSIGN(void* current, device.CurrentNativeStream());
  EXPECT_NE(current, default_stream);
  EXPECT_EQ(kernels_stream(), reinterpret_cast<intptr_t>(current));
  HETRT_ASSERT_OK(device.SetCurrentStream(nullptr));
  EXPECT_EQ(kernels_stream(), reinterpret_cast<intptr_t>(default_stream));
  HETRT_ASSERT_OK(device.DestroyStream(stream));
}

}  // namespace
}  // namespace hetrt::cuda_testing
