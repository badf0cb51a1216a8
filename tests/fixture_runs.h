// A TVM fixture run on a list of devices in every execution mode, and through
// the CLI, checked against the outputs TVM recorded (the OpenCL and CUDA
// suites run their fixtures this way).
#pragma once

#include <string>
#include <vector>

#include <dlpack/dlpack.h>

namespace hetrt::testing {

// Every mode: deploy.so or the graph.json + lib.so (+ params) triple, the
// asynchronous or the sequential executor, shared-memory or staged copies;
// each run `runs_per_mode` times (a second run reuses modules and workspace).
// Every output within the fixture's self_check_same_device tolerance.
void ExpectFixtureMatchesInEveryMode(const std::string& dir, const std::vector<DLDevice>& devices,
                                     int runs_per_mode = 1);

// `cli` run DIR/deploy.so --device ... --inputs ... --save-outputs: exit 0 and
// output 0 within the tolerance.
void ExpectCliRunMatches(const std::string& cli, const std::string& dir, const std::vector<DLDevice>& devices);

}  // namespace hetrt::testing
