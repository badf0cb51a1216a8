// A direct-call floor: the kernels some work calls, recorded once through a
// kernel observer, then called in a plain loop. Each buffer the work passed
// (by address) gets one buffer here, holding the bytes it held when first
// seen, so aliasing between kernels is kept and none of the runtime's work
// (allocation, checks, registers, bookkeeping) is left.
#pragma once

#include <cstring>
#include <map>
#include <vector>

#include "hetrt/base/tensor.h"
#include "hetrt/relax/profile.h"
#include "hetrt/tvm_abi/tvm_ffi_context.h"

namespace hetrt {

class KernelFloor {
 public:
  // kCopies: each buffer copied (the floor owns its memory; relax_bench).
  // kInPlace: the recorded addresses themselves, valid while their owner
  // lives and hands out the same memory each time (a pooled VM in its steady
  // state, a KV cache): the floor touches the same memory the work did, so
  // interleaving the two evicts nothing from the caches that one of them alone
  // would keep.
  enum class Buffers { kCopies, kInPlace };
  explicit KernelFloor(Buffers buffers = Buffers::kCopies) : buffers_mode_(buffers) {
    tensors_.reserve(kMaxTensors);  // addresses handed to the kernels stay put
    shapes_.reserve(kMaxTensors);
  }
  KernelFloor(KernelFloor&&) = default;

  // Records every call it sees; install it on each source of kernel calls.
  RelaxKernelObserver Observer() {
    return [this](const hetrt_packed_func_t& k, const hetrt_value_t* v, const int32_t* c, int32_t n) {
      Record(k, v, c, n);
    };
  }
  Status status() const {
    if (tensors_.size() >= kMaxTensors) return ResourceExhausted("too many kernel arguments to record");
    return failed_;
  }
  size_t num_calls() const { return calls_.size(); }

  // tvm-ffi kernels (a v0.22+ library's) are called as tvm-ffi functions,
  // their arguments converted once, at recording: the floor has no adapter.
  void Run() {
    hetrt_value_t ret;
    int32_t ret_code;
    for (const Call& c : calls_) {
      if (c.ffi != nullptr) {
        hetrt_ffi_any_t result{};
        c.ffi(nullptr, &anys_[c.begin], c.n, &result);
      } else {
        c.fn(&values_[c.begin], &codes_[c.begin], c.n, &ret, &ret_code, c.resource);
      }
    }
  }

 private:
  static constexpr size_t kMaxTensors = 16384;
  struct Call {
    hetrt_packed_cfunc_t fn;
    void* resource;
    size_t begin;
    int32_t n;
    hetrt_ffi_safe_call_t ffi;  // set for a tvm-ffi kernel
  };

  void Record(const hetrt_packed_func_t& k, const hetrt_value_t* v, const int32_t* c, int32_t n) {
    if (!failed_.ok() || tensors_.size() + static_cast<size_t>(n) >= kMaxTensors) return;
    calls_.push_back({k.call, k.resource, values_.size(), n, FfiSafeCallOf(k)});
    for (int32_t i = 0; i < n; ++i) {
      hetrt_value_t value = v[i];
      if (c[i] == HETRT_TYPE_DLTENSOR && buffers_mode_ == Buffers::kInPlace) {
        const auto* dl = static_cast<const DLTensor*>(v[i].v_handle);
        shapes_.emplace_back(dl->shape, dl->shape + dl->ndim);
        DLTensor copy = *dl;
        copy.shape = shapes_.back().data();
        tensors_.push_back(copy);
        value.v_handle = &tensors_.back();
      } else if (c[i] == HETRT_TYPE_DLTENSOR) {
        const auto* dl = static_cast<const DLTensor*>(v[i].v_handle);
        const uint64_t nbytes =
            Tensor::Borrow(dl->data, dl->device, {dl->shape, dl->shape + dl->ndim}, dl->dtype).nbytes() +
            dl->byte_offset;
        auto it = buffers_.find(dl->data);
        if (it == buffers_.end() || it->second.nbytes() < nbytes) {
          auto t = Tensor::EmptyHost({static_cast<int64_t>(nbytes)}, {kDLUInt, 8, 1});
          if (!t.ok()) {
            failed_ = t.status();
            return;
          }
          std::memcpy(t->data(), dl->data, nbytes);
          // A larger view of a buffer seen before: calls recorded with the
          // smaller copy keep it (their reads stay in bounds).
          if (it != buffers_.end()) outgrown_.push_back(std::move(it->second));
          it = buffers_.insert_or_assign(dl->data, std::move(t).value()).first;
        }
        shapes_.emplace_back(dl->shape, dl->shape + dl->ndim);
        DLTensor copy = *dl;
        copy.data = it->second.data();
        copy.shape = shapes_.back().data();
        tensors_.push_back(copy);
        value.v_handle = &tensors_.back();
      }
      values_.push_back(value);
      codes_.push_back(c[i]);
      hetrt_ffi_any_t any{};
      if (calls_.back().ffi != nullptr && !PackedArgToFfiAny(value, c[i], any)) {
        failed_ = InvalidArgument("a tvm-ffi kernel's argument of packed type code " + std::to_string(c[i]));
        return;
      }
      anys_.push_back(any);
    }
  }

  std::vector<Call> calls_;
  std::vector<hetrt_value_t> values_;
  std::vector<int32_t> codes_;
  std::vector<hetrt_ffi_any_t> anys_;  // the same arguments for tvm-ffi kernels
  std::vector<DLTensor> tensors_;
  std::vector<std::vector<int64_t>> shapes_;
  std::map<const void*, Tensor> buffers_;  // recorded data address -> the floor's buffer
  std::vector<Tensor> outgrown_;
  Buffers buffers_mode_;
  Status failed_;
};

}  // namespace hetrt
