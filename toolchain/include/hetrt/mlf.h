// Model Library Format (MLF), written for graph models whose host code is C,
// and turned into deploy libraries. The reader (MlfPackage) is the SDK's
// hetrt/sdk/mlf_package.h, which plugins use without the toolchain.
#pragma once

#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "hetrt/base/status.h"
#include "hetrt/formats/params.h"
#include "hetrt/module_export.h"
#include "hetrt/sdk/mlf_package.h"

namespace hetrt {

// A graph model whose host code is C, to be written as Model Library Format.
struct MlfGraphModel {
  std::string model_name;
  std::string graph_json;
  std::vector<NamedTensor> params;
  // File name -> text: C sources (codegen/host/src/) and headers (codegen/host/include/).
  std::vector<std::pair<std::string, std::string>> sources, headers;
};

// Writes version-7 metadata (io and storage sizes from the graph), the graph,
// the params and the C code. When no source defines TVMSystemLibEntryPoint, a
// <model>_lib0.c with the system-library table of the graph's functions is added.
Status WriteMlf(const MlfGraphModel& model, const std::string& output);
// The graph model held by a graph MLF (what WriteMlf takes).
Result<MlfGraphModel> MlfGraphModelOf(const MlfPackage& mlf);

// The folder with hetrt's TVM-compatible C headers (tvm/runtime/...) and
// dlpack/dlpack.h that TVM-generated C code includes (GeneratedCodeIncludeDir()).
std::string TvmCHeadersDir();

// A graph MLF to a deploy library: the C code compiled with hetrt's headers and
// linked with a GraphExecutorFactory blob (graph + params) into `output`.
Status ExportMlfToLibrary(const MlfPackage& mlf, const std::string& output, const LinkOptions& options);

}  // namespace hetrt
