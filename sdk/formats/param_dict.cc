#include "hetrt/sdk/param_dict.h"

#include "hetrt/sdk/byte_stream.h"
#include "hetrt/sdk/ndarray_format.h"

namespace hetrt::sdk {

Result<std::vector<ParamEntry>> ReadParamDict(std::span<const uint8_t> file, const std::string& source) {
  ByteReader reader(file, source);
  HETRT_ASSIGN_OR_RETURN(ParamDictView dict, ReadParamDictView(reader));
  std::vector<ParamEntry> params(dict.names.size());
  for (size_t i = 0; i < params.size(); ++i) {
    params[i].name = std::move(dict.names[i]);
    params[i].dtype = dict.arrays[i].dtype;
    params[i].shape = std::move(dict.arrays[i].shape);
    params[i].bytes.assign(dict.arrays[i].bytes.begin(), dict.arrays[i].bytes.end());
  }
  return params;
}

Result<std::vector<ParamEntry>> ReadParamDictFile(const std::string& path) {
  HETRT_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, ReadFileBytes(path));
  return ReadParamDict(bytes, path);
}

const ParamEntry* FindParamEntry(const std::vector<ParamEntry>& params, std::string_view name) {
  for (const ParamEntry& p : params)
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace hetrt::sdk
