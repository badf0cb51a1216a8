#include "sim_memory.h"

namespace sim {

std::string AddressSpace::Allocate(uint64_t nbytes, void** address) {
  if (nbytes >= (uint64_t{1} << kOffsetBits))
    return "a simulated block holds at most 4 GiB, " + std::to_string(nbytes) + " bytes asked";
  std::unique_lock lock(mutex_);
  if (nbytes > capacity_ - in_use_)
    return "out of simulated device memory: " + std::to_string(nbytes) + " bytes asked, " +
           std::to_string(capacity_ - in_use_) + " of " + std::to_string(capacity_) + " free";
  Block block{std::unique_ptr<std::byte[]>(new std::byte[nbytes > 0 ? nbytes : 1]), nbytes};
  uint32_t slot = 0;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
    blocks_[slot] = std::move(block);
  } else {
    if (blocks_.size() >= (uint64_t{1} << (56 - kOffsetBits)) - 1) return "too many simulated blocks";
    slot = static_cast<uint32_t>(blocks_.size());
    blocks_.push_back(std::move(block));
  }
  in_use_ += nbytes;
  peak_ = std::max(peak_, in_use_);
  ++live_;
  *address = reinterpret_cast<void*>(kAddressTag | (uint64_t{slot + 1} << kOffsetBits));
  return "";
}

std::string AddressSpace::Free(void* address) {
  const uint64_t a = reinterpret_cast<uint64_t>(address);
  const uint64_t slot = ((a & ~kTagMask) >> kOffsetBits) - 1;
  std::unique_lock lock(mutex_);
  if (!IsDeviceAddress(address) || (a & 0xffffffffu) != 0 || slot >= blocks_.size() || !blocks_[slot].bytes)
    return "not the start of a live simulated allocation";
  in_use_ -= blocks_[slot].size;
  --live_;
  blocks_[slot] = Block{};
  free_slots_.push_back(static_cast<uint32_t>(slot));
  return "";
}

std::byte* AddressSpace::Resolve(const void* address, uint64_t nbytes, std::string* why) const {
  if (!IsDeviceAddress(address)) {
    *why = "is not simulated device memory (a host pointer where device memory belongs: a missing copy?)";
    return nullptr;
  }
  const uint64_t a = reinterpret_cast<uint64_t>(address);
  const uint64_t slot = ((a & ~kTagMask) >> kOffsetBits) - 1;
  const uint64_t offset = a & 0xffffffffu;
  std::shared_lock lock(mutex_);
  if (slot >= blocks_.size() || !blocks_[slot].bytes) {
    *why = "is a freed or unknown simulated address";
    return nullptr;
  }
  const Block& b = blocks_[slot];
  if (offset > b.size || nbytes > b.size - offset) {
    *why = "reaches past its block (" + std::to_string(offset) + " + " + std::to_string(nbytes) + " > " +
           std::to_string(b.size) + " bytes)";
    return nullptr;
  }
  return b.bytes.get() + offset;
}

uint64_t AddressSpace::bytes_in_use() const {
  std::shared_lock lock(mutex_);
  return in_use_;
}
uint64_t AddressSpace::peak_bytes_in_use() const {
  std::shared_lock lock(mutex_);
  return peak_;
}
uint64_t AddressSpace::num_allocations() const {
  std::shared_lock lock(mutex_);
  return live_;
}

}  // namespace sim
