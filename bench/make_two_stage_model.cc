// Writes the serving benchmarks' CPU+OpenCL two-stage model
// (kernels::kServingTwoStageShape) as <dir>/deploy.so, for
// bench/serve_overlap.py, which serves it from a `hetrt serve` process.
// Usage: make_two_stage_model DIR
#include <cstdio>
#include <string>
#include <vector>

#include "kernel_set.h"
#include "two_stage_model.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  auto built = hetrt::kernels::BuildTwoStageModel(kDLOpenCL, hetrt::kernels::kServingTwoStageShape);
  if (!built.ok()) {
    std::fprintf(stderr, "%s\n", built.status().message().c_str());
    return 1;
  }
  const std::string path = std::string(argv[1]) + "/deploy.so";
  hetrt::Status s =
      hetrt::kernels::ExportGraph(built->graph_json, built->params, std::vector<int32_t>{kDLOpenCL}, path);
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.message().c_str());
    return 1;
  }
  std::printf("%s\n", path.c_str());
  return 0;
}
