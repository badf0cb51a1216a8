// A copy between two fixed devices, on a fixed stream, whose args struct is
// filled once (at executor create time); Issue() sets only this run's
// addresses, which zero-copy binding may have moved. On the run loop's path.
#pragma once

#include "hetrt/device/device.h"

namespace hetrt {

// Thread contract: thread-compatible; Issue() is const and may run on several threads when their streams differ.
class PreparedCopy {
 public:
  PreparedCopy() = default;
  // `copier`: the device whose plugin moves the bytes.
  PreparedCopy(const Device& copier, DLDevice src, DLDevice dst, hetrt_stream_t* stream, bool blocking)
      : copier_(copier), args_(copier.Make<hetrt_copy_args_t>()) {
    args_.src_device = src;
    args_.dst_device = dst;
    args_.stream = stream;
    args_.flags = blocking ? HETRT_COPY_BLOCKING : 0;
  }
  bool valid() const { return copier_.valid(); }

  Status Issue(const void* src, uint64_t src_offset, void* dst, uint64_t dst_offset, uint64_t nbytes) const {
    hetrt_copy_args_t args = args_;
    args.src = src;
    args.src_offset = src_offset;
    args.dst = dst;
    args.dst_offset = dst_offset;
    args.nbytes = nbytes;
    return copier_.Call(copier_.api()->copy, &args, "copy");
  }

 private:
  Device copier_;
  hetrt_copy_args_t args_{};
};

}  // namespace hetrt
