// The Relax VM's pooled allocator (TVM's memory/pooled_allocator.h, in
// behaviour): sizes round up to 4 KiB pages, freed blocks wait in per-size
// free lists for the next request of that size, so a model called again with
// the same shapes allocates nothing from its plugin. On a failed allocation the
// pool releases everything it keeps and tries once more.
//
// Thread contract: thread-safe (tensors may be dropped on any thread).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "hetrt/base/tensor.h"

namespace hetrt {

class PooledAllocator final : public Allocator, public std::enable_shared_from_this<PooledAllocator> {
 public:
  static constexpr uint64_t kPageBytes = 4096;
  explicit PooledAllocator(Allocator& backing) : backing_(backing), backing_owner_(backing.Owner()) {}
  ~PooledAllocator() override;

  DLDevice device() const override { return backing_.device(); }
  Result<void*> Allocate(uint64_t nbytes, uint64_t alignment) override;
  void Free(void* data) override;
  void* HostPointer(void* data) const override { return backing_.HostPointer(data); }
  // Tensors from the pool keep it (and through it the plugin) alive.
  std::shared_ptr<void> Owner() const override { return std::const_pointer_cast<PooledAllocator>(shared_from_this()); }
  // Gives every kept block back to the backing allocator.
  void Release();
  uint64_t backing_allocations() const;

 private:
  Allocator& backing_;
  std::shared_ptr<void> backing_owner_;
  mutable std::mutex mutex_;
  std::unordered_map<void*, uint64_t> sizes_;          // every block handed out or kept
  std::map<uint64_t, std::vector<void*>> free_lists_;  // by rounded size
  uint64_t backing_allocations_ = 0;
};

}  // namespace hetrt
