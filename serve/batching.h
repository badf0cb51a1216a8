// Dynamic batching on static shapes: requests with fewer rows than the
// model's compiled batch dimension N are packed along axis 0 into one
// N-row tensor (the rest zero), run once, and each caller gets its rows back.
#pragma once

#include <cstdint>
#include <vector>

#include "hetrt/base/tensor.h"

namespace hetrt::serve {

// Bytes of one row (all axes but the first) of `t`.
uint64_t RowBytes(const Tensor& t);
// Copies `parts` (same dtype and trailing shape as `batch`) one after the
// other into the first rows of host tensor `batch`; zero-fills the rows left.
Status PackRows(const std::vector<const Tensor*>& parts, Tensor& batch);
// Rows [begin, begin + rows) of host tensor `t` as a new host tensor.
Result<Tensor> SliceRows(const Tensor& t, int64_t begin, int64_t rows);

}  // namespace hetrt::serve
