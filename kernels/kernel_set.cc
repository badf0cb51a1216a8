#include "kernel_set.h"

#include <sstream>

#include "hetrt/byte_stream.h"
#include "hetrt/factory_modules.h"
#include "hetrt/module_export.h"
#include "hetrt/module_loader.h"
#include "opencl_kernels_source.h"

#ifdef HETRT_HAVE_VULKAN_KERNELS
#include <cstdint>
#include "vulkan_spirv/add.h"
#include "vulkan_spirv/conv2d.h"
#include "vulkan_spirv/dense.h"
#include "vulkan_spirv/maxpool.h"
#include "vulkan_spirv/mul.h"
#include "vulkan_spirv/relu.h"
#include "vulkan_spirv/softmax.h"
#define HETRT_SPIRV(op) hetrt_vk_##op##_spv, std::size(hetrt_vk_##op##_spv)
#else
#define HETRT_SPIRV(op) nullptr, 0
#endif

namespace hetrt::kernels {
namespace {

// The accelerator kernels of every op take the same arguments: `buffers`
// tensors' data, then `ints` int32 sizes, then blockIdx.x and threadIdx.x.
struct KernelInfo {
  Op op;
  const char* cpu;
  const char* opencl_host;
  const char* opencl_kernel;
  const char* vulkan_host;
  const char* vulkan_kernel;
  const uint32_t* spirv;
  size_t spirv_words;
  int buffers;
  int ints;
};

constexpr KernelInfo kKernels[] = {
    {Op::kAdd, "hetrt_add", "hetrt_cl_add", "hetrt_cl_add_kernel", "hetrt_vk_add", "hetrt_vk_add_kernel",
     HETRT_SPIRV(add), 3, 1},
    {Op::kMul, "hetrt_mul", "hetrt_cl_mul", "hetrt_cl_mul_kernel", "hetrt_vk_mul", "hetrt_vk_mul_kernel",
     HETRT_SPIRV(mul), 3, 1},
    {Op::kRelu, "hetrt_relu", "hetrt_cl_relu", "hetrt_cl_relu_kernel", "hetrt_vk_relu", "hetrt_vk_relu_kernel",
     HETRT_SPIRV(relu), 2, 1},
    {Op::kDense, "hetrt_dense", "hetrt_cl_dense", "hetrt_cl_dense_kernel", "hetrt_vk_dense", "hetrt_vk_dense_kernel",
     HETRT_SPIRV(dense), 4, 3},
    {Op::kSoftmax, "hetrt_softmax", "hetrt_cl_softmax", "hetrt_cl_softmax_kernel", "hetrt_vk_softmax",
     "hetrt_vk_softmax_kernel", HETRT_SPIRV(softmax), 2, 2},
    {Op::kConv2d, "hetrt_conv2d", "hetrt_cl_conv2d", "hetrt_cl_conv2d_kernel", "hetrt_vk_conv2d",
     "hetrt_vk_conv2d_kernel", HETRT_SPIRV(conv2d), 4, 10},
    {Op::kMaxPool, "hetrt_maxpool", "hetrt_cl_maxpool", "hetrt_cl_maxpool_kernel", "hetrt_vk_maxpool",
     "hetrt_vk_maxpool_kernel", HETRT_SPIRV(maxpool), 2, 5},
};

// TVM's FunctionInfo: name (written empty), argument types, launch tags.
void WriteFunctionInfo(ByteWriter& w, const char* kernel, const KernelInfo& k) {
  w.WriteString(kernel);
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

Result<std::shared_ptr<Module>> LoadPluginModule(PluginRegistry& registry, const char* type_key,
                                                 const std::vector<uint8_t>& bytes) {
  HETRT_ASSIGN_OR_RETURN(Plugin * plugin, registry.ForTypeKey(type_key));
  ByteReader reader(bytes, std::string("hetrt ") + type_key + " kernel set");
  return PluginModule::Load(plugin, type_key, reader);
}

}  // namespace

Result<std::string> FunctionName(Op op, int32_t device_type) {
  for (const KernelInfo& k : kKernels) {
    if (k.op != op) continue;
    if (device_type == kDLCPU) return std::string(k.cpu);
    if (device_type == kDLOpenCL) return std::string(k.opencl_host);
    if (device_type == kDLVulkan && k.spirv == nullptr)
      return Unimplemented("hetrt was built without glslangValidator: its kernel set has no Vulkan kernels");
    if (device_type == kDLVulkan) return std::string(k.vulkan_host);
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
  for (const KernelInfo& k : kKernels) WriteFunctionInfo(w, k.opencl_kernel, k);
  w.WriteString(kOpenClSource);
  return w.Take();
}

Result<std::shared_ptr<Module>> LoadOpenClModule(PluginRegistry& registry) {
  return LoadPluginModule(registry, "opencl", OpenClModuleBytes());
}

Result<std::vector<uint8_t>> VulkanModuleBytes() {
  ByteWriter w;
  w.WriteString("vulkan");
  w.WriteU64(std::size(kKernels));
  for (const KernelInfo& k : kKernels) WriteFunctionInfo(w, k.vulkan_kernel, k);
  w.WriteU64(std::size(kKernels));
  for (const KernelInfo& k : kKernels) {
    if (k.spirv == nullptr)
      return Unimplemented("hetrt was built without glslangValidator: its kernel set has no Vulkan kernels");
    w.WriteString(k.vulkan_kernel);
    w.WritePod<uint32_t>(0);  // scalars in push constants
    w.WriteU64(k.spirv_words);
    for (size_t i = 0; i < k.spirv_words; ++i) w.WritePod<uint32_t>(k.spirv[i]);
  }
  return w.Take();
}

Result<std::shared_ptr<Module>> LoadVulkanModule(PluginRegistry& registry) {
  HETRT_ASSIGN_OR_RETURN(auto bytes, VulkanModuleBytes());
  return LoadPluginModule(registry, "vulkan", bytes);
}

Status ExportGraph(const std::string& graph_json, const std::vector<NamedTensor>& params,
                   const std::vector<int32_t>& device_types, const std::string& path) {
  auto factory = std::make_shared<GraphExecutorFactoryModule>(graph_json, params, "default");
  auto host = std::make_shared<PendingHostLibrary>();
  factory->Import(host);
  for (int32_t type : device_types) {
    if (type == kDLCPU) continue;
    Result<std::shared_ptr<Module>> module = type == kDLOpenCL   ? LoadOpenClModule(PluginRegistry::Global())
                                             : type == kDLVulkan ? LoadVulkanModule(PluginRegistry::Global())
                                                                 : Unimplemented("hetrt's kernel set has no kernels for device type " +
                                                                                 std::to_string(type));
    if (!module.ok()) return module.status();
    host->Import(*module);
  }
  return ExportLibrary(*factory, ObjectFiles(), path, {});
}

Status ExportGraph(const std::string& graph_json, const std::vector<NamedTensor>& params, bool with_opencl,
                   const std::string& path) {
  return ExportGraph(graph_json, params, with_opencl ? std::vector<int32_t>{kDLOpenCL} : std::vector<int32_t>{}, path);
}

}  // namespace hetrt::kernels
