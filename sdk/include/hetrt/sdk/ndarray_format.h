// TVM's NDArray stream and param-dict (.params) layouts: the one reader and
// writer of them, in the leaf library (hetrt::formats) that the core and the
// plugins both link. Arrays come back as views of the input's bytes; the core
// copies them into its Tensors (formats/params.h), a plugin into plain host
// bytes (sdk/param_dict.h). Every field is checked against what is left and
// what the header says before anything is allocated for it.
#pragma once

#include <dlpack/dlpack.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "hetrt/sdk/byte_stream.h"

namespace hetrt::sdk {

inline constexpr uint64_t kNDArrayMagic = 0xDD5E40F096B4A13FULL;
inline constexpr uint64_t kParamDictMagic = 0xF7E58D4F05049CB7ULL;
// Bytes one named array takes at least (its name's length + an empty array
// header): bounds counts read from files before anything is allocated.
inline constexpr uint64_t kLeastParamBytes = 8 + 40;

struct NDArrayView {
  DLDataType dtype{kDLFloat, 32, 1};
  std::vector<int64_t> shape;
  std::span<const uint8_t> bytes;  // dense, row-major; borrowed from the input
};

// One array (magic, reserved, device, ndim, dtype, shape, bytes): saved on the
// host, a known dtype of one lane, the byte count the shape makes.
Result<NDArrayView> ReadNDArray(ByteReader& reader);
// `count` names (u64 length + bytes each), none twice: a param dict's name
// list and the executor factories' param sections. `field` names them in errors.
Result<std::vector<std::string>> ReadParamNames(ByteReader& reader, uint64_t count, const std::string& field);

struct ParamDictView {
  std::vector<std::string> names;
  std::vector<NDArrayView> arrays;  // same order as names
};
// A whole param dict; trailing bytes are an error.
Result<ParamDictView> ReadParamDictView(ByteReader& reader);

// The device field is always written as cpu:0, as TVM does.
void WriteNDArray(DLDataType dtype, std::span<const int64_t> shape, std::span<const uint8_t> bytes,
                  ByteWriter& writer);

}  // namespace hetrt::sdk
