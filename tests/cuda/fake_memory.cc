// The fake driver's memory: device memory (host memory underneath, at most
// HETRT_FAKE_CUDA_MEMORY_MIB per device, so out-of-memory is real), pinned
// and mapped host memory, and copies, which run on their stream like kernels.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fake_driver.h"

namespace fake_cuda {

const Allocation* FindAllocation(uintptr_t p, uintptr_t* base) {
  auto& all = S().allocations;
  auto it = all.upper_bound(p);
  if (it == all.begin()) return nullptr;
  --it;
  if (p >= it->first + std::max<size_t>(it->second.size, 1)) return nullptr;
  *base = it->first;
  return &it->second;
}

bool Reachable(const CUctx_st* ctx, uintptr_t p, size_t n) {
  uintptr_t base = 0;
  const Allocation* a = FindAllocation(p, &base);
  if (a == nullptr || p + n > base + a->size) return false;
  if (a->host || a->device == ctx->device) return true;
  return std::find(ctx->peers.begin(), ctx->peers.end(), a->device) != ctx->peers.end();
}

}  // namespace fake_cuda

using namespace fake_cuda;

namespace {

constexpr size_t kDeviceAlignment = 256;
size_t RoundUp(size_t n) { return (n + kDeviceAlignment - 1) / kDeviceAlignment * kDeviceAlignment; }

// Whether an address is memory this driver allocated (device or pinned host).
bool DriverMemory(uintptr_t p) {
  uintptr_t base = 0;
  return FindAllocation(p, &base) != nullptr;
}

// A range in driver memory must lie inside one allocation; anything else is
// pageable host memory, which the driver cannot check.
bool RangeOk(uintptr_t p, size_t n) {
  uintptr_t base = 0;
  const Allocation* a = FindAllocation(p, &base);
  return a == nullptr || p + n <= base + a->size;
}

// Freeing waits for the work of the memory's device first (of every device
// for pinned memory), as cuMemFree does; an unknown address is refused. After
// a fault the memory still goes, and the fault is returned.
CUresult FreeAllocation(uintptr_t p, bool host) {
  Lock lock(S().mutex);
  if (!host && t_current == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  auto it = S().allocations.find(p);
  if (it == S().allocations.end() || it->second.host != host) return CUDA_ERROR_INVALID_VALUE;
  const int device = it->second.device;
  WaitIdle(lock, host ? nullptr : &S().contexts[device]);
  it = S().allocations.find(p);  // the lock was released meanwhile
  if (it == S().allocations.end()) return CUDA_ERROR_INVALID_VALUE;
  if (!host) S().device_bytes[device] -= RoundUp(it->second.size);
  S().allocations.erase(it);
  std::free(reinterpret_cast<void*>(p));
  return t_current ? t_current->sticky : CUDA_SUCCESS;
}

CUresult Copy(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream) {
  Lock lock(S().mutex);
  if (CUresult r = NeedContext(lock)) return r;
  CUctx_st* ctx = ContextOf(stream);
  if (ctx != t_current) return CUDA_ERROR_INVALID_HANDLE;
  if (!RangeOk(dst, n) || !RangeOk(src, n)) return CUDA_ERROR_INVALID_VALUE;
  Log("copy " + std::to_string(n) + " stream=" + std::to_string(StreamId(stream)));
  auto* to = reinterpret_cast<unsigned char*>(dst);
  if (!DriverMemory(dst)) {
    // Into pageable memory: the call returns once the copy is done.
    Work copy{{}, [to, src, n] {
                std::memmove(to, reinterpret_cast<const void*>(src), n);
                return CUDA_SUCCESS;
              }};
    if (CUresult r = Enqueue(lock, ctx, stream, std::move(copy))) return r;
    WaitFor(lock, MarkNow(lock, ctx, stream));
    return ctx->sticky;
  }
  if (!DriverMemory(src)) {
    // From pageable memory: read now (staged), landing when the stream gets there.
    const auto* from = reinterpret_cast<const unsigned char*>(src);
    return Enqueue(lock, ctx, stream, Work{{}, [to, bytes = std::vector<unsigned char>(from, from + n)] {
                                             std::memcpy(to, bytes.data(), bytes.size());
                                             return CUDA_SUCCESS;
                                           }});
  }
  return Enqueue(lock, ctx, stream, Work{{}, [to, src, n] {
                                           std::memmove(to, reinterpret_cast<const void*>(src), n);
                                           return CUDA_SUCCESS;
                                         }});
}

}  // namespace

extern "C" {

CUresult cuMemAlloc_v2(CUdeviceptr* ptr, size_t size) {
  Lock lock(S().mutex);
  if (CUresult r = NeedContext(lock)) return r;
  if (ptr == nullptr || size == 0) return CUDA_ERROR_INVALID_VALUE;
  const size_t rounded = RoundUp(size);
  uint64_t& in_use = S().device_bytes[t_current->device];
  if (rounded < size || rounded > TotalMemory() - in_use) return CUDA_ERROR_OUT_OF_MEMORY;
  void* p = std::aligned_alloc(kDeviceAlignment, rounded);
  if (p == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  in_use += rounded;
  S().allocations[reinterpret_cast<uintptr_t>(p)] = {size, t_current->device, false, false};
  *ptr = reinterpret_cast<CUdeviceptr>(p);
  return CUDA_SUCCESS;
}

CUresult cuMemHostAlloc(void** ptr, size_t size, unsigned int flags) {
  Lock lock(S().mutex);
  if (CUresult r = NeedContext(lock)) return r;
  if (ptr == nullptr || size == 0 ||
      (flags & ~unsigned{CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED}))
    return CUDA_ERROR_INVALID_VALUE;
  void* p = std::aligned_alloc(4096, (size + 4095) / 4096 * 4096);
  if (p == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  S().allocations[reinterpret_cast<uintptr_t>(p)] = {size, t_current->device, true,
                                                     (flags & CU_MEMHOSTALLOC_DEVICEMAP) != 0};
  *ptr = p;
  return CUDA_SUCCESS;
}

CUresult cuMemFree_v2(CUdeviceptr ptr) { return FreeAllocation(ptr, false); }

CUresult cuMemFreeHost(void* ptr) { return FreeAllocation(reinterpret_cast<uintptr_t>(ptr), true); }

// Only memory allocated with CU_MEMHOSTALLOC_DEVICEMAP is mapped; with
// unified addressing its device address is its host address.
CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr* device, void* host, unsigned int flags) {
  Lock lock(S().mutex);
  if (CUresult r = NeedContext(lock)) return r;
  uintptr_t base = 0;
  const Allocation* a = FindAllocation(reinterpret_cast<uintptr_t>(host), &base);
  if (device == nullptr || flags != 0 || a == nullptr || !a->host || !a->mapped) return CUDA_ERROR_INVALID_VALUE;
  *device = reinterpret_cast<CUdeviceptr>(host);
  return CUDA_SUCCESS;
}

CUresult cuMemGetInfo_v2(size_t* free, size_t* total) {
  Lock lock(S().mutex);
  if (CUresult r = NeedContext(lock)) return r;
  *total = TotalMemory();
  *free = *total - S().device_bytes[t_current->device];
  return CUDA_SUCCESS;
}

// As CUDA does: a copy into pageable host memory returns once it is done
// (after the stream's earlier work); one from pageable memory reads it now and
// lands later; anything else runs when the stream gets to it.
CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream) {
  return Copy(dst, src, n, stream);
}

// The synchronous copies bench/cuda_bench.cc measures the plugin against:
// on the legacy stream, returning once done.
CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t n) {
  if (CUresult r = Copy(dst, reinterpret_cast<CUdeviceptr>(src), n, nullptr)) return r;
  return cuStreamSynchronize(nullptr);
}
CUresult cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t n) {
  if (CUresult r = Copy(reinterpret_cast<CUdeviceptr>(dst), src, n, nullptr)) return r;
  return cuStreamSynchronize(nullptr);
}
CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  if (CUresult r = Copy(dst, src, n, nullptr)) return r;
  return cuStreamSynchronize(nullptr);
}

CUresult cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx, size_t n,
                           CUstream stream) {
  Lock lock(S().mutex);
  if (CUresult r = NeedContext(lock)) return r;
  CUctx_st* ctx = ContextOf(stream);
  if (dst_ctx == nullptr || src_ctx == nullptr || ctx != t_current) return CUDA_ERROR_INVALID_CONTEXT;
  if (!RangeOk(dst, n) || !RangeOk(src, n)) return CUDA_ERROR_INVALID_VALUE;
  Log("peer copy " + std::to_string(n) + " cuda:" + std::to_string(src_ctx->device) +
      " -> cuda:" + std::to_string(dst_ctx->device) + " stream=" + std::to_string(StreamId(stream)));
  return Enqueue(lock, ctx, stream, Work{{}, [dst, src, n] {
                                           std::memmove(reinterpret_cast<void*>(dst),
                                                        reinterpret_cast<const void*>(src), n);
                                           return CUDA_SUCCESS;
                                         }});
}

}  // extern "C"
