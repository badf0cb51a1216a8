#include "hetrt/base/tensor.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "hetrt/base/dtype.h"

namespace hetrt {
namespace {

// malloc, aligned by hand, with the offset to the block stored just before the
// data. glibc's aligned_alloc carves an aligned block out of a larger chunk and
// frees the slack: a freed large tensor then no longer fits the next request
// of the same size, the heap grows instead, and every request's 6 MiB tensor
// faults its pages in anew. Blocks of one size from malloc are reused.
class HostAllocatorImpl final : public Allocator {
 public:
  DLDevice device() const override { return {kDLCPU, 0}; }
  Result<void*> Allocate(uint64_t nbytes, uint64_t alignment) override {
    if (alignment < kTensorAlignment) alignment = kTensorAlignment;
    if ((alignment & (alignment - 1)) != 0)
      return InvalidArgument("host allocation: alignment " + std::to_string(alignment) + " is not a power of two");
    constexpr uint64_t kOffsetBytes = sizeof(uint64_t);
    if (alignment > std::numeric_limits<size_t>::max() / 4 ||
        nbytes > std::numeric_limits<size_t>::max() - alignment - kOffsetBytes)
      return ResourceExhausted("host allocation of " + std::to_string(nbytes) + " bytes is too large");
    // Room for the offset and the alignment; a zero-byte tensor still gets a
    // unique pointer, so that "defined" tensors always have data.
    auto* block = static_cast<std::byte*>(std::malloc(static_cast<size_t>(nbytes + alignment + kOffsetBytes)));
    if (block == nullptr) return ResourceExhausted("host allocation of " + std::to_string(nbytes) + " bytes failed");
    const uintptr_t start = reinterpret_cast<uintptr_t>(block) + kOffsetBytes;
    std::byte* data = block + ((start + alignment - 1) & ~(alignment - 1)) - reinterpret_cast<uintptr_t>(block);
    const uint64_t offset = static_cast<uint64_t>(data - block);
    std::memcpy(data - kOffsetBytes, &offset, sizeof offset);
    return static_cast<void*>(data);
  }
  void Free(void* data) override {
    if (data == nullptr) return;
    uint64_t offset = 0;
    std::memcpy(&offset, static_cast<std::byte*>(data) - sizeof offset, sizeof offset);
    std::free(static_cast<std::byte*>(data) - offset);
  }
  void* HostPointer(void* data) const override { return data; }
};

}  // namespace

Allocator& HostAllocator() {
  static HostAllocatorImpl allocator;
  return allocator;
}

struct Tensor::Buffer {
  std::shared_ptr<void> owner;  // keeps the allocator (its plugin) alive
  Allocator* allocator = nullptr;
  void* data = nullptr;
  ~Buffer() {
    if (allocator != nullptr && data != nullptr) allocator->Free(data);
  }
};

namespace {

[[gnu::cold, gnu::noinline]] Status BadShape(std::span<const int64_t> shape) {
  for (int64_t d : shape)
    if (d < 0) return InvalidArgument("negative dimension in shape " + ShapeToString(shape));
  return InvalidArgument("shape " + ShapeToString(shape) + " overflows int64");
}

}  // namespace

Result<int64_t> ShapeNumElements(std::span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) [[unlikely]]
      return BadShape(shape);
  }
  return n;
}

std::string ShapeToString(std::span<const int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

Tensor::Tensor() = default;

Tensor::Tensor(const Tensor& other)
    : buffer_(other.buffer_), shape_(other.shape_), dl_(other.dl_), capacity_(other.capacity_) {
  dl_.shape = shape_.data();
}

Tensor::Tensor(Tensor&& other) noexcept
    : buffer_(std::move(other.buffer_)), shape_(std::move(other.shape_)), dl_(other.dl_), capacity_(other.capacity_) {
  dl_.shape = shape_.data();
  other.dl_ = DLTensor{};
  other.capacity_ = 0;
}

Tensor& Tensor::operator=(const Tensor& other) {
  if (this != &other) *this = Tensor(other);
  return *this;
}

Tensor& Tensor::operator=(Tensor&& other) noexcept {
  if (this != &other) {
    buffer_ = std::move(other.buffer_);
    shape_ = std::move(other.shape_);
    dl_ = other.dl_;
    dl_.shape = shape_.data();
    capacity_ = other.capacity_;
    other.dl_ = DLTensor{};
    other.capacity_ = 0;
  }
  return *this;
}

void Tensor::Init(void* data, DLDevice device, std::vector<int64_t> shape, DLDataType dtype) {
  shape_ = std::move(shape);
  dl_ = DLTensor{};
  dl_.data = data;
  dl_.device = device;
  dl_.ndim = static_cast<int32_t>(shape_.size());
  dl_.dtype = dtype;
  dl_.shape = shape_.data();
  dl_.strides = nullptr;
  dl_.byte_offset = 0;
}

int64_t Tensor::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape_) n *= d;
  return n;
}

uint64_t Tensor::nbytes() const { return static_cast<uint64_t>(num_elements()) * DataTypeBytes(dl_.dtype); }

Result<Tensor> Tensor::Empty(std::vector<int64_t> shape, DLDataType dtype, Allocator& allocator) {
  HETRT_ASSIGN_OR_RETURN(int64_t count, ShapeNumElements(shape));
  const uint64_t elem = DataTypeBytes(dtype);
  if (elem != 0 && static_cast<uint64_t>(count) > std::numeric_limits<uint64_t>::max() / elem)
    return InvalidArgument("tensor of shape " + ShapeToString(shape) + " is too large");
  const uint64_t nbytes = static_cast<uint64_t>(count) * elem;
  HETRT_ASSIGN_OR_RETURN(void* data, allocator.Allocate(nbytes, kTensorAlignment));
  Tensor t;
  t.buffer_ = std::make_shared<Buffer>();
  t.buffer_->owner = allocator.Owner();
  t.buffer_->allocator = &allocator;
  t.buffer_->data = data;
  t.Init(data, allocator.device(), std::move(shape), dtype);
  t.capacity_ = nbytes;
  return t;
}

Result<Tensor> Tensor::EmptyHost(std::vector<int64_t> shape, DLDataType dtype) {
  return Empty(std::move(shape), dtype, HostAllocator());
}

Tensor Tensor::Borrow(void* data, DLDevice device, std::vector<int64_t> shape, DLDataType dtype) {
  Tensor t;
  t.Init(data, device, std::move(shape), dtype);
  t.capacity_ = t.nbytes();
  return t;
}

Tensor Tensor::Adopt(void* data, DLDevice device, std::vector<int64_t> shape, DLDataType dtype,
                     std::shared_ptr<void> owner) {
  Tensor t;
  t.buffer_ = std::make_shared<Buffer>();
  t.buffer_->owner = std::move(owner);  // no allocator: releasing the owner is the free
  t.Init(data, device, std::move(shape), dtype);
  t.capacity_ = t.nbytes();
  return t;
}

namespace {

[[gnu::cold, gnu::noinline]] Status ViewDoesNotFit(std::span<const int64_t> shape, DLDataType dtype,
                                                   uint64_t byte_offset, uint64_t need, uint64_t capacity) {
  return InvalidArgument("view " + ShapeToString(shape) + " " + DataTypeToString(dtype) + " at byte " +
                         std::to_string(byte_offset) + " needs " + std::to_string(need) +
                         " bytes but the storage has " + std::to_string(capacity));
}

// Whether `shape` x `dtype` fits `capacity` bytes from `byte_offset` on.
Status CheckView(std::span<const int64_t> shape, DLDataType dtype, uint64_t byte_offset, uint64_t capacity) {
  HETRT_ASSIGN_OR_RETURN(int64_t count, ShapeNumElements(shape));
  uint64_t need = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(count), DataTypeBytes(dtype), &need)) [[unlikely]]
    return InvalidArgument("view " + ShapeToString(shape) + " is too large");
  if (byte_offset > capacity || need > capacity - byte_offset) [[unlikely]]
    return ViewDoesNotFit(shape, dtype, byte_offset, need, capacity);
  return OkStatus();
}

}  // namespace

Result<Tensor> Tensor::View(std::vector<int64_t> shape, DLDataType dtype, uint64_t byte_offset) const {
  HETRT_RETURN_IF_ERROR(CheckView(shape, dtype, byte_offset, capacity_));
  Tensor t;
  t.buffer_ = buffer_;
  t.Init(dl_.data, dl_.device, std::move(shape), dtype);
  t.dl_.byte_offset = dl_.byte_offset + byte_offset;
  t.capacity_ = capacity_ - byte_offset;
  return t;
}

Status Tensor::AssignView(const Tensor& base, std::span<const int64_t> shape, DLDataType dtype, uint64_t byte_offset) {
  HETRT_RETURN_IF_ERROR(CheckView(shape, dtype, byte_offset, base.capacity_));
  const DLTensor from = base.dl_;
  const uint64_t capacity = base.capacity_;
  if (this != &base) buffer_ = base.buffer_;
  shape_.assign(shape.begin(), shape.end());  // keeps its capacity
  dl_ = DLTensor{};
  dl_.data = from.data;
  dl_.device = from.device;
  dl_.ndim = static_cast<int32_t>(shape_.size());
  dl_.dtype = dtype;
  dl_.shape = shape_.data();
  dl_.byte_offset = from.byte_offset + byte_offset;
  capacity_ = capacity - byte_offset;
  return OkStatus();
}

void Tensor::ReleaseMemory() {
  buffer_.reset();
  dl_.data = nullptr;
  capacity_ = 0;
}

}  // namespace hetrt
