#include "write_model.h"

#include <cstdio>
#include <vector>

#include "kernel_set.h"

namespace hetrt::kernels {

int WriteDeployLibrary(const Result<GraphBuilder::Built>& built, int32_t device_type, const std::string& dir) {
  const std::string path = dir + "/deploy.so";
  const Status written = built.ok() ? ExportGraph(built->graph_json, built->params, std::vector<int32_t>{device_type}, path)
                                    : built.status();
  if (!written.ok()) {
    std::fprintf(stderr, "%s\n", written.message().c_str());
    return 1;
  }
  std::printf("%s\n", path.c_str());
  return 0;
}

}  // namespace hetrt::kernels
