// hetrt's own kernel set, for models built inside hetrt (the demo, tests):
// CPU kernels and OpenCL host wrappers as object files the exporter links, and
// the OpenCL kernels as a module of type_key "opencl".
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "hetrt/module.h"
#include "hetrt/params.h"
#include "hetrt/plugin_registry.h"

namespace hetrt::kernels {

enum class Op { kAdd, kMul, kRelu, kDense, kSoftmax, kConv2d, kMaxPool };

// The packed function implementing `op` on a device type ("hetrt_dense",
// "hetrt_cl_dense"); error for a device type the set has no kernels for.
Result<std::string> FunctionName(Op op, int32_t device_type);

// Object files to link into an exported library (CPU kernels + OpenCL host side).
std::vector<std::string> ObjectFiles();

// The OpenCL kernels as the bytes of an "opencl" module (TVM's blob format).
std::vector<uint8_t> OpenClModuleBytes();
// ... loaded through the OpenCL plugin of `registry`.
Result<std::shared_ptr<Module>> LoadOpenClModule(PluginRegistry& registry);

// Exports a graph (JSON + params) that calls this kernel set into a deploy
// library at `path`: factory -> host code (the set's objects) -> the OpenCL
// module when `with_opencl`.
Status ExportGraph(const std::string& graph_json, const std::vector<NamedTensor>& params, bool with_opencl,
                   const std::string& path);

}  // namespace hetrt::kernels
