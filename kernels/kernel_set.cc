#include "kernel_set.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "hetrt/base/dtype.h"
#include "hetrt/base/install_layout.h"
#include "hetrt/exec/factory_modules.h"
#include "hetrt/module/module_loader.h"
#include "hetrt/module_export.h"
#include "hetrt/relax/vm.h"
#include "hetrt/relax_from_graph.h"
#include "hetrt/sdk/byte_stream.h"
#include "opencl_kernels_source.h"

#ifdef HETRT_HAVE_CUDA_KERNELS
#include "cuda_kernels_ptx.h"
constexpr bool kHaveCudaKernels = true;
#else
constexpr bool kHaveCudaKernels = false;  // built without nvcc
constexpr char kCudaKernelsPtxText[] = "";
#endif

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
constexpr bool kHaveVulkanKernels = true;
#else
#define HETRT_SPIRV(op) nullptr, 0
constexpr bool kHaveVulkanKernels = false;  // built without glslangValidator
#endif

namespace hetrt::kernels {
namespace {

// The accelerator kernels of every op take the same arguments: `buffers`
// tensors' data, then `ints` int32 sizes, then blockIdx.x and threadIdx.x.
// Names follow one pattern: on a device with prefix P (cl_, vk_, cu_), the
// packed function hetrt_P<op> launches the kernel hetrt_P<op>_kernel; the CPU's
// packed function is hetrt_<op>.
struct KernelInfo {
  Op op;
  const char* name;
  const uint32_t* spirv;
  size_t spirv_words;
  int buffers;
  int ints;
};

constexpr KernelInfo kKernels[] = {
    {Op::kAdd, "add", HETRT_SPIRV(add), 3, 1},         {Op::kMul, "mul", HETRT_SPIRV(mul), 3, 1},
    {Op::kRelu, "relu", HETRT_SPIRV(relu), 2, 1},      {Op::kDense, "dense", HETRT_SPIRV(dense), 4, 3},
    {Op::kSoftmax, "softmax", HETRT_SPIRV(softmax), 2, 2}, {Op::kConv2d, "conv2d", HETRT_SPIRV(conv2d), 4, 10},
    {Op::kMaxPool, "maxpool", HETRT_SPIRV(maxpool), 2, 5},
};

// The name prefix of a device's kernels, or NULL when the set has none for it.
const char* Prefix(int32_t device_type) {
  switch (device_type) {
    case kDLCPU: return "";
    case kDLOpenCL: return "cl_";
    case kDLVulkan: return "vk_";
    case kDLCUDA: return "cu_";
    default: return nullptr;
  }
}
std::string HostName(const KernelInfo& k, const char* prefix) { return std::string("hetrt_") + prefix + k.name; }
std::string KernelName(const KernelInfo& k, const char* prefix) { return HostName(k, prefix) + "_kernel"; }

// TVM's FunctionInfo: name (written empty), argument types, launch tags.
void WriteFunctionInfo(ByteWriter& w, const std::string& kernel, const KernelInfo& k) {
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

Status NoVulkanKernels() {
  return Unimplemented("hetrt was built without glslangValidator: its kernel set has no Vulkan kernels");
}
Status NoCudaKernels() { return Unimplemented("hetrt was built without nvcc: its kernel set has no CUDA kernels"); }

Result<std::shared_ptr<Module>> LoadPluginModule(PluginRegistry& registry, const char* type_key,
                                                 const std::vector<uint8_t>& bytes) {
  HETRT_ASSIGN_OR_RETURN(Plugin * plugin, registry.ForTypeKey(type_key));
  ByteReader reader(bytes, std::string("hetrt ") + type_key + " kernel set");
  return PluginModule::Load(plugin, type_key, reader);
}

}  // namespace

Result<std::string> FunctionName(Op op, int32_t device_type) {
  const char* prefix = Prefix(device_type);
  if (prefix == nullptr)
    return Unimplemented("hetrt's kernel set has no kernels for device type " + std::to_string(device_type));
  if (device_type == kDLVulkan && !kHaveVulkanKernels) return NoVulkanKernels();
  if (device_type == kDLCUDA && !kHaveCudaKernels) return NoCudaKernels();
  for (const KernelInfo& k : kKernels)
    if (k.op == op) return HostName(k, prefix);
  return Unimplemented("hetrt's kernel set has no op " + std::to_string(static_cast<int>(op)));
}

Result<std::vector<std::string>> ObjectFiles() {
  // Beside the core library, in the build tree and in an install alike.
  const std::string dir = KernelObjectDir();
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
    if (entry.path().extension() == ".o") files.push_back(entry.path().string());
  if (files.empty())
    return NotFound("hetrt's kernel objects are missing: no .o files in " + dir +
                    (ec ? " (" + ec.message() + ")" : std::string()) + "; is hetrt installed completely?");
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<uint8_t> OpenClModuleBytes() {
  ByteWriter w;
  w.WriteString("cl");
  w.WriteU64(std::size(kKernels));
  for (const KernelInfo& k : kKernels) WriteFunctionInfo(w, KernelName(k, "cl_"), k);
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
  for (const KernelInfo& k : kKernels) WriteFunctionInfo(w, KernelName(k, "vk_"), k);
  w.WriteU64(std::size(kKernels));
  for (const KernelInfo& k : kKernels) {
    if (k.spirv == nullptr) return NoVulkanKernels();
    w.WriteString(KernelName(k, "vk_"));
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

Result<std::vector<uint8_t>> CudaModuleBytes() {
  if (!kHaveCudaKernels) return NoCudaKernels();
  ByteWriter w;
  w.WriteString("ptx");  // TVM's label for data that starts with '/': nvcc's PTX does
  w.WriteU64(std::size(kKernels));
  for (const KernelInfo& k : kKernels) WriteFunctionInfo(w, KernelName(k, "cu_"), k);
  w.WriteString(kCudaKernelsPtxText);
  return w.Take();
}

Result<std::shared_ptr<Module>> LoadCudaModule(PluginRegistry& registry) {
  HETRT_ASSIGN_OR_RETURN(auto bytes, CudaModuleBytes());
  return LoadPluginModule(registry, "cuda", bytes);
}

Status CudaKernelsRunOn(const Plugin& plugin, DLDevice device) {
  if (!kHaveCudaKernels) return NoCudaKernels();
  HETRT_ASSIGN_OR_RETURN(std::string driver, plugin.AttributeString(device, HETRT_DEVICE_ATTR_DRIVER_VERSION));
  const std::string_view ptx(kCudaKernelsPtxText);
  const size_t at = ptx.find("\n.version ");
  if (at == std::string_view::npos) return Internal("hetrt's CUDA kernels have no .version directive");
  const int isa_major = std::atoi(ptx.data() + at + 10);
  if (std::atoi(driver.c_str()) < isa_major + 4)
    return Unimplemented("hetrt's CUDA kernels are PTX " + std::to_string(isa_major) + ".x, which needs a CUDA " +
                         std::to_string(isa_major + 4) + " driver; " + DeviceToString(device) + " has " + driver);
  return OkStatus();
}

namespace {

// Exports `root` with the kernel set's host code below it and, below that,
// the device module of each of `device_types`.
Status ExportWithKernels(const std::shared_ptr<Module>& root, const std::vector<int32_t>& device_types,
                         const std::string& path) {
  auto host = std::make_shared<PendingHostLibrary>();
  root->Import(host);
  for (int32_t type : device_types) {
    if (type == kDLCPU) continue;
    PluginRegistry& plugins = PluginRegistry::Global();
    Result<std::shared_ptr<Module>> module = type == kDLOpenCL   ? LoadOpenClModule(plugins)
                                             : type == kDLVulkan ? LoadVulkanModule(plugins)
                                             : type == kDLCUDA   ? LoadCudaModule(plugins)
                                                                 : Unimplemented("hetrt's kernel set has no kernels for device type " +
                                                                                 std::to_string(type));
    if (!module.ok()) return module.status();
    host->Import(*module);
  }
  HETRT_ASSIGN_OR_RETURN(std::vector<std::string> objects, ObjectFiles());
  return ExportLibrary(*root, objects, path, {});
}

}  // namespace

Status ExportGraph(const std::string& graph_json, const std::vector<NamedTensor>& params,
                   const std::vector<int32_t>& device_types, const std::string& path) {
  return ExportWithKernels(std::make_shared<GraphExecutorFactoryModule>(graph_json, params, "default"), device_types,
                           path);
}

Result<std::vector<DLDevice>> ExportRelax(const std::string& graph_json, const std::vector<NamedTensor>& params,
                                          const std::string& path, const char* root_type_key) {
  HETRT_ASSIGN_OR_RETURN(Graph graph, ParseGraphJson(graph_json, path + " (graph)"));
  HETRT_ASSIGN_OR_RETURN(RelaxFromGraph relax, RelaxExecutableFromGraph(graph, params));
  HETRT_ASSIGN_OR_RETURN(std::vector<uint8_t> image, WriteRelaxExecutable(relax.executable));
  auto root = std::make_shared<RelaxExecutableModule>(
      std::make_shared<const RelaxExecutable>(std::move(relax.executable)), std::move(image), root_type_key);
  std::vector<int32_t> device_types;
  for (const DLDevice& d : relax.devices) device_types.push_back(d.device_type);
  HETRT_RETURN_IF_ERROR(ExportWithKernels(root, device_types, path));
  return relax.devices;
}

Status ExportGraph(const std::string& graph_json, const std::vector<NamedTensor>& params, bool with_opencl,
                   const std::string& path) {
  return ExportGraph(graph_json, params, with_opencl ? std::vector<int32_t>{kDLOpenCL} : std::vector<int32_t>{}, path);
}

}  // namespace hetrt::kernels
