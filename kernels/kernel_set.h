// hetrt's own kernel set, for models built inside hetrt (the demo, tests):
// CPU kernels and OpenCL/Vulkan/CUDA host wrappers as object files the
// exporter links, the OpenCL kernels as a module of type_key "opencl", the
// Vulkan ones (GLSL compiled to SPIR-V at build time) as a module of type_key
// "vulkan" and the CUDA ones (CUDA C compiled to PTX by nvcc at build time) as
// a module of type_key "cuda".
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "hetrt/module/module.h"
#include "hetrt/formats/params.h"
#include "hetrt/plugin_host/plugin_registry.h"

namespace hetrt::kernels {

enum class Op { kAdd, kMul, kRelu, kDense, kSoftmax, kConv2d, kMaxPool };

// The packed function implementing `op` on a device type ("hetrt_dense",
// "hetrt_cl_dense", "hetrt_vk_dense", "hetrt_cu_dense"); error for a device
// type the set has no kernels for (Vulkan: also when the build had no
// glslangValidator; CUDA: no nvcc).
Result<std::string> FunctionName(Op op, int32_t device_type);

// Object files to link into an exported library (CPU kernels + accelerator
// host side), from KernelObjectDir(); an error naming the folder if it has none.
Result<std::vector<std::string>> ObjectFiles();

// The OpenCL kernels as the bytes of an "opencl" module (TVM's blob format).
std::vector<uint8_t> OpenClModuleBytes();
// ... loaded through the OpenCL plugin of `registry`.
Result<std::shared_ptr<Module>> LoadOpenClModule(PluginRegistry& registry);

// The Vulkan kernels as the bytes of a "vulkan" module (TVM v0.18's blob:
// SPIR-V shaders with push-constant scalars, buffers then scalars).
Result<std::vector<uint8_t>> VulkanModuleBytes();
// ... loaded through the Vulkan plugin of `registry`.
Result<std::shared_ptr<Module>> LoadVulkanModule(PluginRegistry& registry);

// The CUDA kernels as the bytes of a "cuda" module (fmt "ptx": PTX for
// compute_75, which the driver compiles for the GPU it runs on).
Result<std::vector<uint8_t>> CudaModuleBytes();
// ... loaded through the CUDA plugin of `registry` (no device needed to load).
Result<std::shared_ptr<Module>> LoadCudaModule(PluginRegistry& registry);
// OK when `device` can run the CUDA kernels: the set was built (nvcc) and the
// driver JIT-compiles their PTX (PTX ISA N.x needs a CUDA N+4 driver).
Status CudaKernelsRunOn(const Plugin& plugin, DLDevice device);

// Exports a graph (JSON + params) that calls this kernel set into a deploy
// library at `path` (.so, or .tar): factory -> host code (the set's objects)
// -> the device module of each of `device_types` (kDLOpenCL, kDLVulkan,
// kDLCUDA; the CPU needs none).
Status ExportGraph(const std::string& graph_json, const std::vector<NamedTensor>& params,
                   const std::vector<int32_t>& device_types, const std::string& path);
// The same graph as a Relax VM executable (RelaxExecutableFromGraph) over the
// same kernels; the devices a VM must be created with, in order. The root's
// type_key is "relax.Executable" (TVM v0.14-v0.19) or "relax.VMExecutable" (v0.20).
Result<std::vector<DLDevice>> ExportRelax(const std::string& graph_json, const std::vector<NamedTensor>& params,
                                          const std::string& path, const char* root_type_key = "relax.Executable");
// The same with the OpenCL module when `with_opencl`.
Status ExportGraph(const std::string& graph_json, const std::vector<NamedTensor>& params, bool with_opencl,
                   const std::string& path);

}  // namespace hetrt::kernels
