// NumPy .npy files (format versions 1-3, little-endian, C order) as host tensors.
#pragma once

#include <span>
#include <string>

#include "hetrt/base/tensor.h"

namespace hetrt {

Result<Tensor> ReadNpy(std::span<const uint8_t> bytes, const std::string& source);
Result<Tensor> LoadNpyFile(const std::string& path);

}  // namespace hetrt
