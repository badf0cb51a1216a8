// The model the plugin hands the conformance kit (the whole-model table's
// `sample`, ABI 2.2): a version-7 AOT Model Library Format tarball whose one
// C function computes y = 2x + 1 over four floats, run in this process (device
// "cpu"), so the kit needs no board, emulator or fixture.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hetrt/base/status.h"

namespace hetrt::micro {

struct SampleModel {
  std::string path;
  std::vector<uint8_t> input, expected_output;  // its one input and output
};

// Writes the tarball as <dir>/micro_sample_mlf.tar.
Result<SampleModel> WriteSampleModel(const std::string& dir);

}  // namespace hetrt::micro
