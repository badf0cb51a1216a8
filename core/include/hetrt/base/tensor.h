// Tensors over DLPack's DLTensor: owning (a shared buffer) or non-owning views.
#pragma once

#include <dlpack/dlpack.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "hetrt/base/status.h"

namespace hetrt {

// Where memory of one device comes from. The host allocator lives in the core;
// device allocators wrap a plugin's device table.
class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual DLDevice device() const = 0;
  virtual Result<void*> Allocate(uint64_t nbytes, uint64_t alignment) = 0;
  virtual void Free(void* data) = 0;
  // The host address of memory this allocator handed out, when the host can
  // address it (host memory, host-visible device memory); NULL otherwise.
  virtual void* HostPointer(void* data) const {
    (void)data;
    return nullptr;
  }
  // What must outlive memory this allocator handed out (its plugin), held by
  // every tensor buffer from it; NULL when the allocator lives for the process.
  virtual std::shared_ptr<void> Owner() const { return nullptr; }
};

// 64-byte aligned host memory (cpu:0), what TVM-compiled CPU code assumes.
Allocator& HostAllocator();

inline constexpr uint64_t kTensorAlignment = 64;

// Number of elements of a shape; error on negative dims or overflow.
Result<int64_t> ShapeNumElements(std::span<const int64_t> shape);
// "[1, 3, 224, 224]"
std::string ShapeToString(std::span<const int64_t> shape);

// Thread contract: thread-compatible, like a shared_ptr: copies share one
// buffer; concurrent reads are safe, writes to the data need the caller's order.
class Tensor {
 public:
  Tensor();
  Tensor(const Tensor& other);
  Tensor(Tensor&& other) noexcept;
  Tensor& operator=(const Tensor& other);
  Tensor& operator=(Tensor&& other) noexcept;
  ~Tensor() = default;

  // A compact tensor in fresh memory from `allocator` (at least 64-byte aligned).
  static Result<Tensor> Empty(std::vector<int64_t> shape, DLDataType dtype, Allocator& allocator);
  // Host tensor, for tests and tools.
  static Result<Tensor> EmptyHost(std::vector<int64_t> shape, DLDataType dtype);
  // Borrows memory someone else owns; the caller keeps it alive.
  static Tensor Borrow(void* data, DLDevice device, std::vector<int64_t> shape, DLDataType dtype);
  // Memory that `owner` keeps alive (a foreign object's reference, say):
  // released with the last copy of the tensor.
  static Tensor Adopt(void* data, DLDevice device, std::vector<int64_t> shape, DLDataType dtype,
                      std::shared_ptr<void> owner);

  // Same memory, another shape/dtype (compact), `byte_offset` bytes further in
  // (DLTensor::byte_offset, so device handles stay unadjusted). Errors if it
  // does not fit.
  Result<Tensor> View(std::vector<int64_t> shape, DLDataType dtype, uint64_t byte_offset = 0) const;
  // Makes this tensor such a view of `base` in place, reusing its own shape
  // storage: no allocation when the rank fits what it held (a VM's steady state).
  Status AssignView(const Tensor& base, std::span<const int64_t> shape, DLDataType dtype, uint64_t byte_offset = 0);
  // Lets go of the memory (the last holder frees it) and keeps the shape
  // storage for a later AssignView.
  void ReleaseMemory();

  // The same memory seen at another address on another device (a
  // host-visible allocation's host pointer); shares this tensor's ownership.
  Tensor AliasAt(void* data, DLDevice device) const {
    Tensor t(*this);
    t.dl_.data = data;
    t.dl_.device = device;
    return t;
  }
  // Whether the tensor holds its memory (Empty, View of one) rather than borrows it.
  bool owns_memory() const { return buffer_ != nullptr; }
  // The memory this tensor holds, the same for all its views (NULL when it
  // borrows), and how many tensors hold it: who else may still read it.
  const void* memory_identity() const { return buffer_.get(); }
  long memory_holders() const { return buffer_.use_count(); }

  bool defined() const { return dl_.data != nullptr || !shape_.empty() || buffer_ != nullptr; }
  DLTensor* dl() { return &dl_; }
  const DLTensor* dl() const { return &dl_; }
  void* data() const { return dl_.data; }
  template <typename T>
  T* data_as() const {
    return static_cast<T*>(dl_.data);
  }
  const std::vector<int64_t>& shape() const { return shape_; }
  DLDataType dtype() const { return dl_.dtype; }
  DLDevice device() const { return dl_.device; }
  int64_t num_elements() const;
  uint64_t nbytes() const;
  // Bytes of the memory behind this tensor (>= nbytes() for views of bigger storage).
  uint64_t capacity_bytes() const { return capacity_; }
  std::span<const uint8_t> host_bytes() const {
    return {static_cast<const uint8_t*>(dl_.data), static_cast<size_t>(nbytes())};
  }

 private:
  struct Buffer;
  void Init(void* data, DLDevice device, std::vector<int64_t> shape, DLDataType dtype);

  std::shared_ptr<Buffer> buffer_;
  std::vector<int64_t> shape_;
  DLTensor dl_{};
  uint64_t capacity_ = 0;
};

}  // namespace hetrt
