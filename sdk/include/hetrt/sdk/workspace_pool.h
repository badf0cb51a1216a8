// Workspace memory of one device (workspace_alloc / workspace_free), reused
// across calls: one free list per power-of-two size class. TVM host code frees
// workspace right after launching the kernel that uses it, so a freed block is
// reused only on the stream it was freed on (in order behind that kernel), or
// on any stream once that stream is gone (ForgetStream).
//
// Blocks are named by what workspace_alloc hands out (`void* data`: a device
// pointer, a buffer descriptor); the plugin creates and destroys them.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "hetrt/sdk/error.h"

namespace hetrt::sdk {

template <class StreamKey>
class WorkspacePool {
 public:
  // Power-of-two size classes of at least 256 bytes, below 2^kClasses.
  static constexpr int kClasses = 48;
  static int SizeClass(uint64_t nbytes) { return nbytes <= 256 ? 8 : 64 - __builtin_clzll(nbytes - 1); }

  // workspace_alloc: a free block of the size class of `nbytes` that `stream`
  // may use, else a new one from create(uint64_t bytes, void** data) (an error
  // value). `kind` names the device in messages ("Vulkan").
  template <class Create, class Destroy>
  hetrt_error_t* Allocate(uint64_t nbytes, StreamKey stream, const char* kind, Create create, Destroy destroy,
                          void** out) {
    const int c = SizeClass(nbytes);
    if (c >= kClasses)
      return MakeErrorf(HETRT_STATUS_RESOURCE_EXHAUSTED, "%s workspace of %llu bytes", kind,
                        static_cast<unsigned long long>(nbytes));
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto& list = free_lists_[static_cast<size_t>(c)];
      for (size_t k = list.size(); k-- > 0;) {
        Block& block = blocks_.at(list[k]);
        // Freed on another live stream: its kernel may still be using it.
        if (block.freed_on != stream && block.freed_on != StreamKey{}) continue;
        *out = list[k];
        list[k] = list.back();
        list.pop_back();
        return nullptr;
      }
    }
    void* data = nullptr;
    if (hetrt_error_t* e = create(uint64_t{1} << c, &data)) return e;
    try {
      std::lock_guard<std::mutex> lock(mutex_);
      blocks_.emplace(data, Block{c, StreamKey{}});
    } catch (...) {
      destroy(data);
      throw;
    }
    *out = data;
    return nullptr;
  }

  // workspace_free: `data` goes back to its free list (the pool still owns it).
  hetrt_error_t* Free(void* data, StreamKey stream, const char* kind) {
    if (data == nullptr) return nullptr;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = blocks_.find(data);
    if (it == blocks_.end())
      return MakeErrorf(HETRT_STATUS_INVALID_ARGUMENT, "not a %s workspace buffer of this device", kind);
    it->second.freed_on = stream;
    free_lists_[static_cast<size_t>(it->second.size_class)].push_back(data);
    return nullptr;
  }

  // The stream is gone, its work done: blocks last freed on it are free for any stream.
  void ForgetStream(StreamKey stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [data, block] : blocks_)
      if (block.freed_on == stream) block.freed_on = StreamKey{};
  }

  // Teardown: destroy(data) for every block the pool created.
  template <class Destroy>
  void DestroyAll(Destroy destroy) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [data, block] : blocks_) destroy(data);
    blocks_.clear();
    for (auto& list : free_lists_) list.clear();
  }

 private:
  struct Block {
    int size_class;
    StreamKey freed_on;  // StreamKey{}: usable on any stream
  };
  std::mutex mutex_;
  std::array<std::vector<void*>, kClasses> free_lists_;
  std::unordered_map<void*, Block> blocks_;
};

}  // namespace hetrt::sdk
