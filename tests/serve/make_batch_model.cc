// Writes a model compiled for batch 4 (hetrt's kernels: dense + relu layers,
// rows independent) as <dir>/deploy.so, for the serving tests' dynamic
// batching: the TVM fixtures have no batch-4 model.
// Usage: serve_make_batch_model DIR [WIDTH]
#include <cstdio>
#include <cstdlib>
#include <string>

#include "two_branch_model.h"
#include "write_model.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DIR [WIDTH]\n", argv[0]);
    return 2;
  }
  hetrt::kernels::TwoBranchShape shape;
  shape.layers = 2;
  shape.rows = 4;
  shape.width = argc > 2 ? std::atoi(argv[2]) : 32;
  if (shape.width < 1 || shape.width > 4096) {
    std::fprintf(stderr, "WIDTH must be in 1..4096\n");
    return 2;
  }
  return hetrt::kernels::WriteDeployLibrary(hetrt::kernels::BuildTwoBranchModel(kDLCPU, shape), kDLCPU, argv[1]);
}
