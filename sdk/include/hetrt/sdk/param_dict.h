// TVM's param-dict (.params) files read into plain host bytes, for code that
// does not link the core (a plugin reading inputs a user hands it). Read-only;
// the reader is hetrt/sdk/ndarray_format.h's, as the core's (formats/params.h,
// into Tensors) is.
#pragma once

#include <dlpack/dlpack.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hetrt/base/status.h"

namespace hetrt::sdk {

struct ParamEntry {
  std::string name;
  DLDataType dtype{kDLFloat, 32, 1};
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;  // dense, row-major
};

// The arrays of a param dict, in file order; DATA_LOSS naming the field that
// is wrong in a truncated or corrupt file (`source` names it in messages).
Result<std::vector<ParamEntry>> ReadParamDict(std::span<const uint8_t> file, const std::string& source);
Result<std::vector<ParamEntry>> ReadParamDictFile(const std::string& path);

// nullptr when absent.
const ParamEntry* FindParamEntry(const std::vector<ParamEntry>& params, std::string_view name);

}  // namespace hetrt::sdk
