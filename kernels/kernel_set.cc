#include "kernel_set.h"

#include <sstream>

#include "hetrt/byte_stream.h"
#include "hetrt/factory_modules.h"
#include "hetrt/module_export.h"
#include "hetrt/module_loader.h"
#include "opencl_kernels_source.h"

namespace hetrt::kernels {
namespace {

struct KernelInfo {
  Op op;
  const char* cpu;
  const char* opencl_host;
  const char* opencl_kernel;
  int buffers;  // then this many int32 sizes
  int ints;
};

constexpr KernelInfo kKernels[] = {
    {Op::kAdd, "hetrt_add", "hetrt_cl_add", "hetrt_cl_add_kernel", 3, 1},
    {Op::kMul, "hetrt_mul", "hetrt_cl_mul", "hetrt_cl_mul_kernel", 3, 1},
    {Op::kRelu, "hetrt_relu", "hetrt_cl_relu", "hetrt_cl_relu_kernel", 2, 1},
    {Op::kDense, "hetrt_dense", "hetrt_cl_dense", "hetrt_cl_dense_kernel", 4, 3},
    {Op::kSoftmax, "hetrt_softmax", "hetrt_cl_softmax", "hetrt_cl_softmax_kernel", 2, 2},
    {Op::kConv2d, "hetrt_conv2d", "hetrt_cl_conv2d", "hetrt_cl_conv2d_kernel", 4, 10},
    {Op::kMaxPool, "hetrt_maxpool", "hetrt_cl_maxpool", "hetrt_cl_maxpool_kernel", 2, 5},
};

}  // namespace

Result<std::string> FunctionName(Op op, int32_t device_type) {
  for (const KernelInfo& k : kKernels) {
    if (k.op != op) continue;
    if (device_type == kDLCPU) return std::string(k.cpu);
    if (device_type == kDLOpenCL) return std::string(k.opencl_host);
  }
  return Unimplemented("hetrt's kernel set has no kernels for device type " + std::to_string(device_type));
}

std::vector<std::string> ObjectFiles() {
  std::vector<std::string> files;
  std::stringstream list(HETRT_KERNEL_OBJECTS);
  for (std::string file; std::getline(list, file, '|');)
    if (!file.empty()) files.push_back(file);
  return files;
}

std::vector<uint8_t> OpenClModuleBytes() {
  ByteWriter w;
  w.WriteString("cl");
  w.WriteU64(std::size(kKernels));
  for (const KernelInfo& k : kKernels) {
    w.WriteString(k.opencl_kernel);
    w.WriteString("");
    w.WriteU64(static_cast<uint64_t>(k.buffers + k.ints));
    for (int i = 0; i < k.buffers + k.ints; ++i) {
      const bool handle = i < k.buffers;
      w.WritePod<uint8_t>(handle ? kDLOpaqueHandle : kDLInt);
      w.WritePod<uint8_t>(handle ? 64 : 32);
      w.WritePod<uint16_t>(1);
    }
    w.WriteU64(2);
    w.WriteString("blockIdx.x");
    w.WriteString("threadIdx.x");
  }
  w.WriteString(kOpenClSource);
  return w.Take();
}

Result<std::shared_ptr<Module>> LoadOpenClModule(PluginRegistry& registry) {
  HETRT_ASSIGN_OR_RETURN(Plugin * plugin, registry.ForTypeKey("opencl"));
  const auto bytes = OpenClModuleBytes();
  ByteReader reader(bytes, "hetrt OpenCL kernel set");
  return PluginModule::Load(plugin, "opencl", reader);
}

Status ExportGraph(const std::string& graph_json, const std::vector<NamedTensor>& params, bool with_opencl,
                   const std::string& path) {
  auto factory = std::make_shared<GraphExecutorFactoryModule>(graph_json, params, "default");
  auto host = std::make_shared<PendingHostLibrary>();
  factory->Import(host);
  if (with_opencl) {
    HETRT_ASSIGN_OR_RETURN(auto cl, LoadOpenClModule(PluginRegistry::Global()));
    host->Import(cl);
  }
  return ExportLibrary(*factory, ObjectFiles(), path, {});
}

}  // namespace hetrt::kernels
