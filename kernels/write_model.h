// The end of the model-writing tools (tests/serve/make_batch_model,
// bench/make_bench_model): a model GraphBuilder built, exported as
// <dir>/deploy.so with the kernel set's objects.
#pragma once

#include <cstdint>
#include <string>

#include "hetrt/graph_builder.h"

namespace hetrt::kernels {

// Prints the library's path on stdout, or the error on stderr; returns the
// tool's exit status (0 or 1).
int WriteDeployLibrary(const Result<GraphBuilder::Built>& built, int32_t device_type, const std::string& dir);

}  // namespace hetrt::kernels
