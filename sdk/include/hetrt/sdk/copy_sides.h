// The two sides of a `copy` entry. What a side is (a buffer handle, host
// bytes, pinned memory) is the plugin's own; the rules every plugin applies
// to both sides (no NULL pointer, a range inside its buffer, messages naming
// "source" or "destination") are here, once.
#pragma once

#include <cstdint>
#include <string>

#include "hetrt/plugin_abi.h"
#include "hetrt/sdk/error.h"

namespace hetrt::sdk {

// Which side of the copy, as messages name it.
struct CopySide {
  DLDevice device;
  const void* ptr;  // never NULL when a resolver sees it
  uint64_t offset;
  uint64_t nbytes;
  const char* which;  // "source" or "destination"

  // OUT_OF_RANGE: "copy source range [16, +8) exceeds the 20-byte buffer".
  hetrt_error_t* RangeError(uint64_t size, const char* what = "buffer") const {
    return MakeError(HETRT_STATUS_OUT_OF_RANGE, std::string("copy ") + which + " range [" + std::to_string(offset) +
                                                    ", +" + std::to_string(nbytes) + ") exceeds the " +
                                                    std::to_string(size) + "-byte " + what);
  }
  bool Exceeds(uint64_t size) const { return offset > size || nbytes > size - offset; }
  // INVALID_ARGUMENT unless the side is on the host or on `device_type`.
  hetrt_error_t* CheckDeviceType(int device_type, const char* backend) const {
    if (device.device_type == kDLCPU || device.device_type == device_type) return nullptr;
    return MakeError(HETRT_STATUS_INVALID_ARGUMENT,
                     std::string("copy ") + which + " is neither " + backend + " nor a CPU device");
  }
};

// Resolves both sides with the plugin's
// `resolve(hetrt_instance_t* self, const CopySide&, Side*) -> hetrt_error_t*`.
template <class Side, class Resolve>
hetrt_error_t* ResolveCopySides(const hetrt_copy_args_t& a, Resolve&& resolve, Side* src, Side* dst) {
  const CopySide sides[2] = {{a.src_device, a.src, a.src_offset, a.nbytes, "source"},
                             {a.dst_device, a.dst, a.dst_offset, a.nbytes, "destination"}};
  Side* out[2] = {src, dst};
  for (int i = 0; i < 2; ++i) {
    if (sides[i].ptr == nullptr) return MakeError(HETRT_STATUS_INVALID_ARGUMENT, std::string("NULL copy ") + sides[i].which);
    if (hetrt_error_t* e = resolve(a.self, sides[i], out[i])) return e;
  }
  return nullptr;
}

}  // namespace hetrt::sdk
