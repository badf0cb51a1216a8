#include "workspace_pool.h"

#include <algorithm>
#include <cstdlib>
#include <new>

namespace hetrt::cpu {
namespace {

// Small enough to be harmless on every thread, large enough that typical
// operator scratch fits in the first block.
constexpr size_t kMinBlockBytes = size_t{64} << 10;

// False on overflow.
bool RoundUpToAlignment(uint64_t nbytes, size_t* rounded) {
  if (nbytes > SIZE_MAX - (kWorkspaceAlignment - 1)) return false;
  *rounded = (static_cast<size_t>(nbytes) + kWorkspaceAlignment - 1) & ~(kWorkspaceAlignment - 1);
  return true;
}

}  // namespace

WorkspaceStack::~WorkspaceStack() { ReleaseBlocksFrom(0); }

void* WorkspaceStack::Allocate(uint64_t nbytes) noexcept {
  // At least one alignment unit, so that every live allocation has its own
  // address and a free names exactly one of them.
  size_t size = 0;
  if (!RoundUpToAlignment(std::max<uint64_t>(nbytes, 1), &size)) return nullptr;
  const Position before = top_;
  if (blocks_.empty() || blocks_[top_.block_index].capacity - top_.offset < size) {
    if (!MoveToBlockWithRoomFor(size)) return nullptr;
  }
  std::byte* data = blocks_[top_.block_index].base + top_.offset;
  try {
    live_.push_back(Allocation{data, before, false});
  } catch (const std::bad_alloc&) {
    top_ = before;
    return nullptr;
  }
  top_.offset += size;
  return data;
}

bool WorkspaceStack::Free(void* data) noexcept {
  if (!live_.empty() && live_.back().data == data) {
    top_ = live_.back().before;
    live_.pop_back();
    PopFreedAllocations();
    if (live_.empty() && blocks_.size() > 1) MergeBlocks();
    return true;
  }
  // Out of order: the allocation is usually near the top, so search downwards.
  for (auto allocation = live_.rbegin(); allocation != live_.rend(); ++allocation) {
    if (allocation->data == data && !allocation->freed) {
      allocation->freed = true;
      return true;
    }
  }
  return false;
}

bool WorkspaceStack::MoveToBlockWithRoomFor(size_t size) {
  // Every block above the top one is empty.
  const size_t next_index = blocks_.empty() ? 0 : top_.block_index + 1;
  if (next_index < blocks_.size() && blocks_[next_index].capacity >= size) {
    top_ = Position{next_index, 0};
    return true;
  }
  ReleaseBlocksFrom(next_index);
  // Doubling the total keeps the number of blocks, and of heap calls, logarithmic.
  const size_t capacity = std::max({size, TotalCapacity(), kMinBlockBytes});
  void* base = std::aligned_alloc(kWorkspaceAlignment, capacity);
  if (base == nullptr) return false;
  try {
    blocks_.push_back(Block{static_cast<std::byte*>(base), capacity});
  } catch (const std::bad_alloc&) {
    std::free(base);
    return false;
  }
  top_ = Position{next_index, 0};
  return true;
}

void WorkspaceStack::PopFreedAllocations() {
  while (!live_.empty() && live_.back().freed) {
    top_ = live_.back().before;
    live_.pop_back();
  }
}

void WorkspaceStack::MergeBlocks() {
  const size_t capacity = TotalCapacity();
  ReleaseBlocksFrom(0);
  top_ = Position{0, 0};
  // On failure the stack simply starts empty; the next Allocate retries. The
  // vector keeps its capacity, so this push_back cannot throw.
  void* base = std::aligned_alloc(kWorkspaceAlignment, capacity);
  if (base != nullptr) blocks_.push_back(Block{static_cast<std::byte*>(base), capacity});
}

void WorkspaceStack::ReleaseBlocksFrom(size_t first_index) {
  for (size_t index = first_index; index < blocks_.size(); ++index) std::free(blocks_[index].base);
  blocks_.resize(std::min(first_index, blocks_.size()));
}

size_t WorkspaceStack::TotalCapacity() const {
  size_t total = 0;
  for (const Block& block : blocks_) total += block.capacity;
  return total;
}

WorkspaceStack& ThreadWorkspace() {
  thread_local WorkspaceStack stack;
  return stack;
}

}  // namespace hetrt::cpu
