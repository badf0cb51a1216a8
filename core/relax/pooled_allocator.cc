#include "relax/pooled_allocator.h"

#include "hetrt/base/dtype.h"

namespace hetrt {

PooledAllocator::~PooledAllocator() { Release(); }

Result<void*> PooledAllocator::Allocate(uint64_t nbytes, uint64_t alignment) {
  if (nbytes > (uint64_t{1} << 62))
    return ResourceExhausted("allocation of " + std::to_string(nbytes) + " bytes on " + DeviceToString(device()));
  const uint64_t rounded = (nbytes + kPageBytes - 1) / kPageBytes * kPageBytes + (nbytes == 0 ? kPageBytes : 0);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = free_lists_.find(rounded);
    if (it != free_lists_.end() && !it->second.empty()) {
      void* block = it->second.back();
      it->second.pop_back();
      return block;
    }
  }
  auto block = backing_.Allocate(rounded, alignment);
  if (!block.ok()) {
    Release();  // what the pool keeps may be what the device lacks
    block = backing_.Allocate(rounded, alignment);
    if (!block.ok()) return block.status();
  }
  std::lock_guard<std::mutex> lock(mutex_);
  sizes_[*block] = rounded;
  ++backing_allocations_;
  return *block;
}

void PooledAllocator::Free(void* data) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = sizes_.find(data);
  if (it == sizes_.end()) return;  // not ours: nothing to give back
  free_lists_[it->second].push_back(data);
}

void PooledAllocator::Release() {
  std::map<uint64_t, std::vector<void*>> kept;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    kept.swap(free_lists_);
    for (auto& [size, blocks] : kept)
      for (void* block : blocks) sizes_.erase(block);
  }
  for (auto& [size, blocks] : kept)
    for (void* block : blocks) backing_.Free(block);
}

uint64_t PooledAllocator::backing_allocations() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return backing_allocations_;
}

}  // namespace hetrt
