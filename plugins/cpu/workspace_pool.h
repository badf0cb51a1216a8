// Scratch memory for compiled kernels (TVMBackendAllocWorkspace /
// TVMBackendFreeWorkspace). Kernels call it from inside parallel tasks on any
// thread, so every thread owns a stack allocator and no lock is needed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace hetrt::cpu {

inline constexpr size_t kWorkspaceAlignment = 64;

// Bump allocation from blocks the stack keeps between uses. Generated code frees
// in reverse order, which pops the stack; a free out of that order only marks
// the allocation, and it is popped once everything above it has gone. Once the
// blocks have grown to a thread's high-water mark (they are merged into one
// whenever the stack empties), allocation touches the heap no more.
class WorkspaceStack {
 public:
  WorkspaceStack() = default;
  ~WorkspaceStack();

  WorkspaceStack(const WorkspaceStack&) = delete;
  WorkspaceStack& operator=(const WorkspaceStack&) = delete;

  // kWorkspaceAlignment-aligned; nullptr when the heap is exhausted.
  void* Allocate(uint64_t nbytes) noexcept;
  // False when `data` is not a live allocation of this stack.
  bool Free(void* data) noexcept;

 private:
  struct Block {
    std::byte* base;
    size_t capacity;
  };
  struct Position {
    size_t block_index;
    size_t offset;
  };
  struct Allocation {
    std::byte* data;
    Position before;  // where the stack top returns to when this is popped
    bool freed;       // freed out of order, still below the top
  };

  bool MoveToBlockWithRoomFor(size_t size);
  void PopFreedAllocations();
  void MergeBlocks();
  void ReleaseBlocksFrom(size_t first_index);
  size_t TotalCapacity() const;

  std::vector<Block> blocks_;
  std::vector<Allocation> live_;  // bottom to top
  Position top_{0, 0};
};

// The calling thread's stack.
WorkspaceStack& ThreadWorkspace();

}  // namespace hetrt::cpu
