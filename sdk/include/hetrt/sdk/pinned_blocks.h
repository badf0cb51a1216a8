// The HOST_PINNED memory a plugin instance handed out, by host address: what
// allocate adds, free takes back, and copies look up to tell pinned host
// memory from other pointers. Thread-safe: any thread may allocate, free and
// copy.
#pragma once

#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>

namespace hetrt::sdk {

template <class Block>
class PinnedBlocks {
 public:
  // May throw std::bad_alloc (the entry guard reports it); the caller then
  // still owns the block.
  void Add(void* host, Block block) {
    std::lock_guard<std::mutex> lock(mutex_);
    blocks_.emplace(host, std::move(block));
  }
  // The block at `host`, removed; nothing when `host` is not one of them.
  std::optional<Block> Take(void* host) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = blocks_.find(host);
    if (it == blocks_.end()) return std::nullopt;
    Block block = std::move(it->second);
    blocks_.erase(it);
    return block;
  }
  // A copy of the block at `host`, which stays.
  std::optional<Block> Find(const void* host) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = blocks_.find(const_cast<void*>(host));
    if (it == blocks_.end()) return std::nullopt;
    return it->second;
  }
  // Every block left, removed (instance teardown: what the core never freed).
  std::unordered_map<void*, Block> TakeAll() {
    std::lock_guard<std::mutex> lock(mutex_);
    return std::exchange(blocks_, {});
  }

 private:
  mutable std::mutex mutex_;
  std::unordered_map<void*, Block> blocks_;
};

}  // namespace hetrt::sdk
