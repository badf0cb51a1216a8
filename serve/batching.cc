#include "batching.h"

#include <cstring>

namespace hetrt::serve {

uint64_t RowBytes(const Tensor& t) {
  if (t.shape().empty() || t.shape()[0] == 0) return 0;
  return t.nbytes() / static_cast<uint64_t>(t.shape()[0]);
}

Status PackRows(const std::vector<const Tensor*>& parts, Tensor& batch) {
  if (batch.shape().empty()) return InvalidArgument("batching: a scalar has no batch axis");
  const uint64_t row = RowBytes(batch), capacity = batch.nbytes();
  auto* out = static_cast<uint8_t*>(batch.data());
  uint64_t offset = 0;
  for (const Tensor* part : parts) {
    if (part->shape().size() != batch.shape().size() || RowBytes(*part) != row)
      return InvalidArgument("batching: a part's trailing shape differs from the batch's");
    if (offset + part->nbytes() > capacity) return InvalidArgument("batching: parts hold more rows than the batch");
    std::memcpy(out + offset, part->data(), part->nbytes());
    offset += part->nbytes();
  }
  std::memset(out + offset, 0, capacity - offset);
  return OkStatus();
}

Result<Tensor> SliceRows(const Tensor& t, int64_t begin, int64_t rows) {
  if (t.shape().empty() || begin < 0 || rows < 0 || begin + rows > t.shape()[0])
    return OutOfRange("batching: rows out of range");
  std::vector<int64_t> shape = t.shape();
  shape[0] = rows;
  HETRT_ASSIGN_OR_RETURN(Tensor slice, Tensor::EmptyHost(shape, t.dtype()));
  const uint64_t row = RowBytes(t);
  std::memcpy(slice.data(), static_cast<const uint8_t*>(t.data()) + static_cast<uint64_t>(begin) * row,
              static_cast<uint64_t>(rows) * row);
  return slice;
}

}  // namespace hetrt::serve
