// TVM's NDArray stream and param-dict (.params) formats, byte-compatible both
// ways, as host Tensors (the reader itself: hetrt/sdk/ndarray_format.h).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hetrt/sdk/byte_stream.h"
#include "hetrt/base/tensor.h"

namespace hetrt {


struct NamedTensor {
  std::string name;
  Tensor tensor;  // host memory
};

// One NDArray (magic, reserved, device, ndim, dtype, shape, bytes) into host memory.
Result<Tensor> ReadNDArray(ByteReader& reader);
// `count` names (u64 length + bytes each), no name twice: the name list of a
// param dict and of the executor factories' param sections. `field` names
// them in errors ("param name").
Result<std::vector<NamedTensor>> ReadParamNames(ByteReader& reader, uint64_t count, const std::string& field);
// Writes a host tensor; the device field is always written as cpu:0, like TVM.
Status WriteNDArray(const Tensor& tensor, ByteWriter& writer);

// A param dict, in file order (names are unique).
Result<std::vector<NamedTensor>> ReadParamDict(std::span<const uint8_t> bytes, const std::string& source);
Result<std::vector<NamedTensor>> LoadParamDictFile(const std::string& path);
Result<std::vector<uint8_t>> WriteParamDict(const std::vector<NamedTensor>& params);

// Finds a name in a dict; nullptr when absent.
const NamedTensor* FindParam(const std::vector<NamedTensor>& params, std::string_view name);

}  // namespace hetrt
