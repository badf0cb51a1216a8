// The simulated accelerator's address space. Device memory lives in blocks the
// plugin owns; what allocate() hands out is a *device address*: a tag in the
// top byte, the block number, and an offset. It is not a host pointer: the
// host dereferencing it faults (the address is not canonical on x86-64 or
// AArch64), and a kernel given a host pointer where device memory belongs (a
// missing __copy) gets a clear error instead of reading host memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

namespace sim {

inline constexpr uint64_t kAddressTag = 0x5aull << 56;  // 'Z' for simulated
inline constexpr uint64_t kTagMask = 0xffull << 56;
inline constexpr int kOffsetBits = 32;  // a block holds up to 4 GiB

class AddressSpace {
 public:
  explicit AddressSpace(uint64_t capacity) : capacity_(capacity) {}

  // A new block of `nbytes` (0 is allowed: a distinct, freeable address).
  // Empty string on success, else why it failed.
  std::string Allocate(uint64_t nbytes, void** address);
  std::string Free(void* address);
  // The host bytes behind [address, address + nbytes), or NULL with `why` set
  // (not a device address of this plugin, freed, or out of the block).
  std::byte* Resolve(const void* address, uint64_t nbytes, std::string* why) const;

  static bool IsDeviceAddress(const void* address) {
    return (reinterpret_cast<uint64_t>(address) & kTagMask) == kAddressTag;
  }

  uint64_t capacity() const { return capacity_; }
  uint64_t bytes_in_use() const;
  uint64_t peak_bytes_in_use() const;
  uint64_t num_allocations() const;

 private:
  struct Block {
    std::unique_ptr<std::byte[]> bytes;
    uint64_t size = 0;
  };
  const uint64_t capacity_;
  mutable std::shared_mutex mutex_;  // kernels resolve concurrently; allocate/free exclusive
  std::vector<Block> blocks_;        // index = block number - 1; a freed block keeps its slot empty
  std::vector<uint32_t> free_slots_;
  uint64_t in_use_ = 0, peak_ = 0, live_ = 0;
};

}  // namespace sim
