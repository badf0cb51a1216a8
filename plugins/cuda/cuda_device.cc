#include "cuda_device.h"

#include <time.h>

#include <algorithm>
#include <cmath>

// An event: a CUevent of the device it was last recorded on (re-created when
// recorded on another device: events belong to a context).
struct hetrt_event {
  hetrt::cuda::Device* device = nullptr;
  CUevent event = nullptr;
  bool timing = false;
  bool recorded = false;
};

namespace hetrt::cuda {
namespace {

// The entries of the device table.
struct DeviceEntries : sdk::CommonDeviceEntries<hetrt_instance, hetrt_stream> {
  HETRT_SDK_DEVICE_ENTRIES
};

// ---- Helpers ----

// The device, made current on this thread.
hetrt_error_t* ActiveDevice(hetrt_instance* inst, DLDevice device, Device** out) {
  if (hetrt_error_t* e = inst->devices.Find(device, out)) return e;
  return inst->Activate(*out);
}

// The CUstream of `stream` on `d` (NULL: d's default stream).
hetrt_error_t* StreamOf(Device* d, hetrt_stream* stream, CUstream* out) {
  if (stream != nullptr && stream->device != d)
    return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "the stream belongs to cuda:" + std::to_string(stream->device->id) +
                                                        ", not cuda:" + std::to_string(d->id));
  *out = stream ? stream->stream : d->stream;
  return nullptr;
}

// ---- Device table ----

hetrt_error_t* DeviceEntries::DeviceAttribute(hetrt_device_attribute_args_t* args) {
  Device* d = nullptr;
  if (hetrt_error_t* e = args->self->devices.Find(args->device, &d)) return e;
  return d->facts.Answer(args, "cuda:" + std::to_string(d->id));
}

hetrt_error_t* DeviceEntries::Allocate(hetrt_allocate_args_t* args) {
  hetrt_instance* inst = args->self;
  Device* d = nullptr;
  if (hetrt_error_t* e = ActiveDevice(inst, args->device, &d)) return e;
  const Driver* cu = inst->driver();
  // The driver refuses empty allocations; one byte keeps every tensor addressable.
  const size_t size = args->nbytes ? static_cast<size_t>(args->nbytes) : 1;
  const std::string what = "allocating " + std::to_string(args->nbytes) + " bytes";
  Allocation a{args->nbytes, d->id, args->kind, nullptr};
  void* data = nullptr;
  switch (args->kind) {
    case HETRT_MEMORY_DEVICE: {
      CUdeviceptr ptr = 0;
      if (CUresult r = cu->cuMemAlloc(&ptr, size)) return inst->Error(d, what + " (cuMemAlloc)", r);
      data = reinterpret_cast<void*>(ptr);
      break;
    }
    case HETRT_MEMORY_HOST_PINNED:
      if (CUresult r = cu->cuMemHostAlloc(&a.host, size, CU_MEMHOSTALLOC_PORTABLE))
        return inst->Error(d, what + " of pinned host memory (cuMemHostAlloc)", r);
      data = a.host;
      break;
    case HETRT_MEMORY_HOST_VISIBLE: {
      if (!d->maps_host_memory)
        return MakeError(HETRT_STATUS_UNIMPLEMENTED,
                         "HOST_VISIBLE memory needs an integrated GPU that maps host memory; " + d->facts.name +
                             " is a discrete GPU");
      if (CUresult r = cu->cuMemHostAlloc(&a.host, size, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP))
        return inst->Error(d, what + " of mapped host memory (cuMemHostAlloc)", r);
      CUdeviceptr ptr = 0;
      if (CUresult r = cu->cuMemHostGetDevicePointer(&ptr, a.host, 0)) {
        cu->cuMemFreeHost(a.host);
        return inst->Error(d, "cuMemHostGetDevicePointer", r);
      }
      data = reinterpret_cast<void*>(ptr);
      break;
    }
    default:
      return MakeError(HETRT_STATUS_INVALID_ARGUMENT,
                       "unknown memory kind " + std::to_string(static_cast<int>(args->kind)));
  }
  if (args->alignment > 1 && reinterpret_cast<uintptr_t>(data) % args->alignment != 0) {
    // The driver aligns to at least 256 bytes; a larger demand cannot be met.
    if (args->kind == HETRT_MEMORY_DEVICE)
      cu->cuMemFree(reinterpret_cast<CUdeviceptr>(data));
    else
      cu->cuMemFreeHost(a.host);
    return MakeError(HETRT_STATUS_INVALID_ARGUMENT,
                     "the CUDA driver returned memory not aligned to " + std::to_string(args->alignment) + " bytes");
  }
  try {
    std::lock_guard<std::mutex> lock(inst->allocations_mutex);
    inst->allocations[reinterpret_cast<uintptr_t>(data)] = a;
  } catch (...) {
    if (args->kind == HETRT_MEMORY_DEVICE)
      cu->cuMemFree(reinterpret_cast<CUdeviceptr>(data));
    else
      cu->cuMemFreeHost(a.host);
    throw;
  }
  d->memory_counters.Allocated(args->nbytes);
  args->data = data;
  args->host_pointer = a.host;
  return nullptr;
}

hetrt_error_t* DeviceEntries::Free(hetrt_free_args_t* args) {
  hetrt_instance* inst = args->self;
  Allocation a;
  {
    std::lock_guard<std::mutex> lock(inst->allocations_mutex);
    auto it = inst->allocations.find(reinterpret_cast<uintptr_t>(args->data));
    if (it == inst->allocations.end() || it->second.kind != args->kind)
      return MakeError(HETRT_STATUS_INVALID_ARGUMENT,
                       "not memory of kind " + std::to_string(args->kind) + " that this CUDA instance allocated");
    a = it->second;
    inst->allocations.erase(it);
  }
  Device* d = inst->devices.at(a.device_id);
  d->memory_counters.Freed(a.nbytes);
  if (hetrt_error_t* e = inst->Activate(d)) return e;
  const Driver* cu = inst->driver();
  // cuMemFree waits for work using the memory; nothing else is needed.
  const CUresult r = a.kind == HETRT_MEMORY_DEVICE ? cu->cuMemFree(reinterpret_cast<CUdeviceptr>(args->data))
                                                   : cu->cuMemFreeHost(a.host);
  return r == CUDA_SUCCESS ? nullptr : inst->Error(d, "freeing memory", r);
}

// One side of a copy: host bytes (a CPU pointer, or this instance's pinned
// memory even when labelled with a CUDA device) or device memory of `device`.
struct Side {
  uintptr_t address = 0;
  Device* device = nullptr;  // NULL: host memory
};

hetrt_error_t* ResolveSide(hetrt_instance* inst, const sdk::CopySide& side, Side* out) {
  const uintptr_t ptr = reinterpret_cast<uintptr_t>(side.ptr);
  out->address = ptr + side.offset;
  if (side.device.device_type == kDLCPU) return nullptr;
  if (hetrt_error_t* e = side.CheckDeviceType(kDLCUDA, "a CUDA")) return e;
  if (hetrt_error_t* e = inst->devices.Find(side.device, &out->device)) return e;
  std::lock_guard<std::mutex> lock(inst->allocations_mutex);
  auto it = inst->allocations.upper_bound(ptr);
  if (it == inst->allocations.begin()) return nullptr;  // not ours (workspace, another allocator): the driver checks
  --it;
  const Allocation& a = it->second;
  const uint64_t start = ptr - it->first;
  if (start > a.nbytes) return nullptr;  // past that allocation: not ours
  if (side.Exceeds(a.nbytes - start))
    return side.RangeError(a.nbytes - start, start == 0 ? "buffer" : "rest of its buffer");
  out->device = a.kind == HETRT_MEMORY_HOST_PINNED ? nullptr : inst->devices.at(a.device_id);
  return nullptr;
}

// Lets two devices reach each other's memory directly where they can (NVLink,
// PCIe P2P); elsewhere cuMemcpyPeerAsync stages through host memory itself.
hetrt_error_t* EnablePeers(hetrt_instance* inst, Device* a, Device* b) {
  std::lock_guard<std::mutex> lock(inst->peers_mutex);
  if (inst->peers.count({a->id, b->id})) return nullptr;
  const Driver* cu = inst->driver();
  for (auto [from, to] : {std::pair{a, b}, std::pair{b, a}}) {
    int can = 0;
    if (cu->cuDeviceCanAccessPeer(&can, from->handle, to->handle) != CUDA_SUCCESS || !can) continue;
    if (hetrt_error_t* e = inst->Activate(to)) return e;
    if (hetrt_error_t* e = inst->Activate(from)) return e;
    const CUresult r = cu->cuCtxEnablePeerAccess(to->context, 0);
    if (r != CUDA_SUCCESS && r != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
      return inst->Error(from, "enabling peer access to cuda:" + std::to_string(to->id), r);
  }
  inst->peers[{a->id, b->id}] = inst->peers[{b->id, a->id}] = true;
  return nullptr;
}

hetrt_error_t* DeviceEntries::Copy(hetrt_copy_args_t* a) {
  hetrt_instance* inst = a->self;
  Side src, dst;
  if (hetrt_error_t* e = sdk::ResolveCopySides(*a, ResolveSide, &src, &dst)) return e;
  Device* d = src.device ? src.device : dst.device;
  if (d == nullptr) {
    if (a->src_device.device_type != kDLCUDA && a->dst_device.device_type != kDLCUDA)
      return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "neither side of the copy is a CUDA device");
    d = inst->devices.at(
        (a->src_device.device_type == kDLCUDA ? a->src_device : a->dst_device).device_id);  // pinned both sides
  }
  CUstream stream = nullptr;
  if (hetrt_error_t* e = StreamOf(d, a->stream, &stream)) return e;
  if (src.device && dst.device && src.device != dst.device)
    if (hetrt_error_t* e = EnablePeers(inst, src.device, dst.device)) return e;
  if (hetrt_error_t* e = inst->Activate(d)) return e;
  const Driver* cu = inst->driver();
  if (a->nbytes > 0) {
    // With unified addressing the driver tells host from device memory itself.
    const CUresult r = src.device && dst.device && src.device != dst.device
                           ? cu->cuMemcpyPeerAsync(dst.address, dst.device->context, src.address, src.device->context,
                                                   a->nbytes, stream)
                           : cu->cuMemcpyAsync(dst.address, src.address, a->nbytes, stream);
    if (r != CUDA_SUCCESS) return inst->Error(d, "copying " + std::to_string(a->nbytes) + " bytes", r);
  }
  if (a->flags & HETRT_COPY_BLOCKING)
    if (CUresult r = cu->cuStreamSynchronize(stream)) return inst->Error(d, "cuStreamSynchronize after a copy", r);
  return nullptr;
}

// ---- Streams ----

hetrt_error_t* DeviceEntries::StreamCreate(hetrt_stream_create_args_t* args) {
  Device* d = nullptr;
  if (hetrt_error_t* e = ActiveDevice(args->self, args->device, &d)) return e;
  // A COPY stream is another stream: the driver puts copies on copy engines itself.
  auto stream = std::make_unique<hetrt_stream>();
  if (CUresult r = args->self->driver()->cuStreamCreate(&stream->stream, CU_STREAM_NON_BLOCKING))
    return args->self->Error(d, "cuStreamCreate", r);
  stream->device = d;
  args->stream = stream.release();
  return nullptr;
}

hetrt_error_t* DeviceEntries::StreamDestroy(hetrt_stream_args_t* args) {
  hetrt_instance* inst = args->self;
  hetrt_stream* stream = args->stream;
  if (stream == nullptr) return nullptr;  // the default stream belongs to the device
  // Forget it as this thread's current stream (other threads must reset theirs).
  Current::Forget(stream);
  Device* d = stream->device;
  if (hetrt_error_t* e = inst->Activate(d)) return e;
  const Driver* cu = inst->driver();
  const CUresult finished = cu->cuStreamSynchronize(stream->stream);
  d->workspace.ForgetStream(stream->stream);  // its work done: its workspace is free for any stream
  const CUresult destroyed = cu->cuStreamDestroy(stream->stream);
  delete stream;
  if (finished != CUDA_SUCCESS) return inst->Error(d, "work on a destroyed stream failed", finished);
  return destroyed == CUDA_SUCCESS ? nullptr : inst->Error(d, "cuStreamDestroy", destroyed);
}

hetrt_error_t* DeviceEntries::StreamSynchronize(hetrt_stream_args_t* args) {
  Device* d = nullptr;
  if (hetrt_error_t* e = ActiveDevice(args->self, args->device, &d)) return e;
  CUstream stream = nullptr;
  if (hetrt_error_t* e = StreamOf(d, args->stream, &stream)) return e;
  const CUresult r = args->self->driver()->cuStreamSynchronize(stream);
  return r == CUDA_SUCCESS ? nullptr : args->self->Error(d, "work on the stream failed", r);
}

hetrt_error_t* DeviceEntries::StreamWaitEvent(hetrt_stream_wait_event_args_t* args) {
  Device* d = nullptr;
  if (hetrt_error_t* e = ActiveDevice(args->self, args->device, &d)) return e;
  CUstream stream = nullptr;
  if (hetrt_error_t* e = StreamOf(d, args->stream, &stream)) return e;
  hetrt_event* event = args->event;
  if (!event->recorded) return nullptr;  // never recorded: complete
  // CUDA orders streams on events of any device of the process.
  const CUresult r = args->self->driver()->cuStreamWaitEvent(stream, event->event, 0);
  return r == CUDA_SUCCESS ? nullptr : args->self->Error(d, "cuStreamWaitEvent", r);
}

hetrt_error_t* DeviceEntries::StreamSetCurrent(hetrt_stream_current_args_t* args) {
  const hetrt_instance* inst = args->self;
  Device* d = nullptr;
  if (hetrt_error_t* e = args->self->devices.Find(args->device, &d)) return e;
  CUstream unused = nullptr;
  if (hetrt_error_t* e = StreamOf(d, args->stream, &unused)) return e;
  if (!Current::Set(inst->serial, d->id, args->stream, &args->previous)) return Current::TableFull("CUDA");
  return nullptr;
}

// ---- Events ----

hetrt_error_t* CreateCuEvent(hetrt_instance* inst, Device* d, bool timing, CUevent* out) {
  if (hetrt_error_t* e = inst->Activate(d)) return e;
  const CUresult r = inst->driver()->cuEventCreate(out, timing ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING);
  return r == CUDA_SUCCESS ? nullptr : inst->Error(d, "cuEventCreate", r);
}

hetrt_error_t* DeviceEntries::EventCreate(hetrt_event_create_args_t* args) {
  Device* d = nullptr;
  if (hetrt_error_t* e = args->self->devices.Find(args->device, &d)) return e;
  auto event = std::make_unique<hetrt_event>();
  event->device = d;
  event->timing = args->flags & HETRT_EVENT_TIMING;
  if (hetrt_error_t* e = CreateCuEvent(args->self, d, event->timing, &event->event)) return e;
  args->event = event.release();
  return nullptr;
}

hetrt_error_t* DeviceEntries::EventDestroy(hetrt_event_args_t* args) {
  hetrt_event* e = args->event;
  if (e == nullptr) return nullptr;
  CUresult r = CUDA_SUCCESS;
  if (e->event) {
    if (hetrt_error_t* err = args->self->Activate(e->device))
      hetrt::sdk::DiscardError(err);  // destroying needs no context, but be safe
    r = args->self->driver()->cuEventDestroy(e->event);
  }
  Device* d = e->device;
  delete e;
  return r == CUDA_SUCCESS ? nullptr : args->self->Error(d, "cuEventDestroy", r);
}

hetrt_error_t* DeviceEntries::EventRecord(hetrt_event_record_args_t* args) {
  hetrt_instance* inst = args->self;
  Device* d = nullptr;
  if (hetrt_error_t* e = ActiveDevice(inst, args->device, &d)) return e;
  hetrt_event* event = args->event;
  CUstream stream = nullptr;
  if (hetrt_error_t* e = StreamOf(d, args->stream, &stream)) return e;
  const Driver* cu = inst->driver();
  if (event->device != d) {  // events belong to their device's context: make it anew there
    if (hetrt_error_t* e = inst->Activate(event->device)) return e;
    cu->cuEventDestroy(event->event);
    event->event = nullptr;
    event->recorded = false;
    event->device = d;
    if (hetrt_error_t* e = CreateCuEvent(inst, d, event->timing, &event->event)) return e;
  }
  if (CUresult r = cu->cuEventRecord(event->event, stream)) return inst->Error(d, "cuEventRecord", r);
  event->recorded = true;
  return nullptr;
}

hetrt_error_t* DeviceEntries::EventQuery(hetrt_event_args_t* args) {
  hetrt_event* e = args->event;
  args->complete = 1;
  if (!e->recorded) return nullptr;
  if (hetrt_error_t* err = args->self->Activate(e->device)) return err;
  const CUresult r = args->self->driver()->cuEventQuery(e->event);
  if (r == CUDA_ERROR_NOT_READY) {
    args->complete = 0;
    return nullptr;
  }
  return r == CUDA_SUCCESS ? nullptr : args->self->Error(e->device, "work before the event failed", r);
}

hetrt_error_t* SynchronizeEvent(hetrt_instance* inst, hetrt_event* e) {
  if (!e->recorded) return nullptr;
  if (hetrt_error_t* err = inst->Activate(e->device)) return err;  // event calls run in their context
  const CUresult r = inst->driver()->cuEventSynchronize(e->event);
  return r == CUDA_SUCCESS ? nullptr : inst->Error(e->device, "work before the event failed", r);
}

hetrt_error_t* DeviceEntries::EventSynchronize(hetrt_event_args_t* args) {
  args->complete = 1;
  return SynchronizeEvent(args->self, args->event);
}

hetrt_error_t* CheckTimingEvent(const hetrt_event* e, const char* call) {
  if (e == nullptr || !e->recorded)
    return MakeError(HETRT_STATUS_FAILED_PRECONDITION, std::string(call) + " needs recorded events");
  if (!e->timing)
    return MakeError(HETRT_STATUS_FAILED_PRECONDITION,
                     std::string(call) + " needs events created with HETRT_EVENT_TIMING");
  return nullptr;
}

hetrt_error_t* ElapsedMs(hetrt_instance* inst, Device* d, CUevent start, CUevent end, double* ms) {
  float elapsed = 0;
  if (CUresult r = inst->driver()->cuEventElapsedTime(&elapsed, start, end))
    return inst->Error(d, "cuEventElapsedTime", r);
  *ms = elapsed;
  return nullptr;
}

hetrt_error_t* DeviceEntries::EventElapsed(hetrt_event_elapsed_args_t* args) {
  hetrt_instance* inst = args->self;
  if (hetrt_error_t* e = CheckTimingEvent(args->start, "event_elapsed_ms")) return e;
  if (hetrt_error_t* e = CheckTimingEvent(args->end, "event_elapsed_ms")) return e;
  if (args->start->device != args->end->device)
    return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "event_elapsed_ms needs two events of one CUDA device");
  if (hetrt_error_t* e = SynchronizeEvent(inst, args->start)) return e;
  if (hetrt_error_t* e = SynchronizeEvent(inst, args->end)) return e;
  return ElapsedMs(inst, args->start->device, args->start->event, args->end->event, &args->milliseconds);
}

// The device clock. CUDA has no absolute event times, only elapsed times
// between events, so the device clock is defined by an anchor event: the first
// one's device time is the host time at which it completed (the middle of the
// window in which that happened), and every later time adds the elapsed time
// since. Elapsed times are float milliseconds (a 24-bit mantissa: 0.5 us at
// 4 s, 0.25 ms at an hour), so whatever reads a time first renews an anchor
// older than kAnchorLifetimeNs, chained: the new anchor's time adds the elapsed
// time since the old one, so the device clock goes on without a jump (taking
// it from the host clock again would jump by the drift between the clocks).
constexpr uint64_t kAnchorLifetimeNs = 4'000'000'000ULL;

// Records `event` on d's clock stream and waits for it; [*before, *after] is
// the host window in which it completed.
hetrt_error_t* StampClock(hetrt_instance* inst, Device* d, CUevent event, uint64_t* before, uint64_t* after) {
  const Driver* cu = inst->driver();
  *before = sdk::MonotonicNs();
  if (CUresult r = cu->cuEventRecord(event, d->clock_stream)) return inst->Error(d, "cuEventRecord (clock)", r);
  if (CUresult r = cu->cuEventSynchronize(event)) return inst->Error(d, "cuEventSynchronize (clock)", r);
  *after = sdk::MonotonicNs();
  return nullptr;
}

// Device time of a completed timing event, relative to d's anchor.
hetrt_error_t* DeviceNs(hetrt_instance* inst, Device* d, CUevent event, int64_t* out) {
  double ms = 0;
  if (hetrt_error_t* e = ElapsedMs(inst, d, d->anchor, event, &ms)) return e;
  *out = d->anchor_ns + std::llround(ms * 1e6);
  return nullptr;
}

// Makes d's first anchor, or renews an old one, before a time is read; d's
// context current and its clock_mutex held.
hetrt_error_t* FreshAnchor(hetrt_instance* inst, Device* d) {
  if (d->anchor != nullptr && sdk::MonotonicNs() - d->anchor_taken_at <= kAnchorLifetimeNs) return nullptr;
  CUevent next = nullptr;
  if (hetrt_error_t* e = CreateCuEvent(inst, d, true, &next)) return e;
  uint64_t before = 0, after = 0;
  int64_t ns = 0;
  hetrt_error_t* error = StampClock(inst, d, next, &before, &after);
  if (error == nullptr) {
    if (d->anchor == nullptr)
      ns = static_cast<int64_t>(before + (after - before) / 2);
    else
      error = DeviceNs(inst, d, next, &ns);
  }
  if (error != nullptr) {
    inst->driver()->cuEventDestroy(next);
    return error;
  }
  if (d->anchor != nullptr) inst->driver()->cuEventDestroy(d->anchor);
  d->anchor = next;
  d->anchor_ns = ns;
  d->anchor_taken_at = after;
  return nullptr;
}

hetrt_error_t* DeviceEntries::EventTimestamp(hetrt_event_timestamp_args_t* args) {
  hetrt_instance* inst = args->self;
  hetrt_event* e = args->event;
  if (hetrt_error_t* err = CheckTimingEvent(e, "event_timestamp")) return err;
  if (hetrt_error_t* err = SynchronizeEvent(inst, e)) return err;
  Device* d = e->device;
  std::lock_guard<std::mutex> lock(d->clock_mutex);
  if (hetrt_error_t* err = inst->Activate(d)) return err;
  if (hetrt_error_t* err = FreshAnchor(inst, d)) return err;
  int64_t ns = 0;
  if (hetrt_error_t* err = DeviceNs(inst, d, e->event, &ns)) return err;
  args->device_ns = static_cast<uint64_t>(std::max<int64_t>(ns, 0));
  return nullptr;
}

// The tightest of a few samples: a marker event on the idle clock stream
// completes between the host readings around its record and its wait.
hetrt_error_t* DeviceEntries::DeviceClock(hetrt_device_clock_args_t* args) {
  hetrt_instance* inst = args->self;
  Device* d = nullptr;
  if (hetrt_error_t* e = ActiveDevice(inst, args->device, &d)) return e;
  std::lock_guard<std::mutex> lock(d->clock_mutex);
  if (hetrt_error_t* e = FreshAnchor(inst, d)) return e;
  CUevent sample = nullptr;
  if (hetrt_error_t* e = CreateCuEvent(inst, d, true, &sample)) return e;
  hetrt_error_t* error = nullptr;
  uint64_t best_window = UINT64_MAX;
  for (int i = 0; i < 5 && error == nullptr; ++i) {
    uint64_t before = 0, after = 0;
    int64_t device_ns = 0;
    error = StampClock(inst, d, sample, &before, &after);
    if (error == nullptr) error = DeviceNs(inst, d, sample, &device_ns);
    if (error == nullptr && after - before < best_window) {
      best_window = after - before;
      args->host_ns = before + (after - before) / 2;
      args->device_ns = static_cast<uint64_t>(std::max<int64_t>(device_ns, 0));
      args->uncertainty_ns = (after - before + 1) / 2;
    }
  }
  inst->driver()->cuEventDestroy(sample);
  return error;
}

// ---- Workspace pool ----

hetrt_error_t* DeviceEntries::WorkspaceAlloc(hetrt_workspace_args_t* args) {
  hetrt_instance* inst = args->self;
  Device* d = nullptr;
  if (hetrt_error_t* e = inst->devices.Find(args->device, &d)) return e;
  const Driver* cu = inst->driver();
  auto create = [inst, d, cu](uint64_t bytes, void** data) -> hetrt_error_t* {
    if (hetrt_error_t* e = inst->Activate(d)) return e;
    CUdeviceptr ptr = 0;
    if (CUresult r = cu->cuMemAlloc(&ptr, static_cast<size_t>(bytes)))
      return inst->Error(d, "allocating " + std::to_string(bytes) + " bytes of workspace", r);
    *data = reinterpret_cast<void*>(ptr);
    return nullptr;
  };
  auto destroy = [cu](void* data) { cu->cuMemFree(reinterpret_cast<CUdeviceptr>(data)); };
  return d->workspace.Allocate(args->nbytes, LaunchStream(inst, d), "CUDA", create, destroy, &args->data);
}

hetrt_error_t* DeviceEntries::WorkspaceFree(hetrt_workspace_args_t* args) {
  Device* d = nullptr;
  if (hetrt_error_t* e = args->self->devices.Find(args->device, &d)) return e;
  return d->workspace.Free(args->data, LaunchStream(args->self, d), "CUDA");
}

}  // namespace

const hetrt_device_api_t kDeviceApi = sdk::DeviceTable<DeviceEntries, kLabel>();

}  // namespace hetrt::cuda

// ---- Instance: discovery, contexts and teardown ----

void hetrt_instance::Discover(hetrt::sdk::DeviceList<hetrt::cuda::Device>& list) {
  using namespace hetrt::cuda;
  const DriverProbe probe = ProbeDriver(DefaultDriverLibrary());
  if (probe.driver == nullptr) {
    list.SetUnavailable(probe.reason);
    return;
  }
  driver_ = probe.driver;
  const Driver* cu = driver_;
  for (int i = 0; i < probe.device_count; ++i) {
    auto d = std::make_unique<Device>();
    d->id = i;
    if (CUresult r = cu->cuDeviceGet(&d->handle, i)) {
      list.SetUnavailable("cuDeviceGet(" + std::to_string(i) + ") failed: " + ResultText(cu, r));
      break;  // devices keep dense ids
    }
    char name[256] = {};
    cu->cuDeviceGetName(name, sizeof name - 1, d->handle);
    d->name = name;
    auto attr = [&](CUdevice_attribute a) {
      int v = 0;
      return cu->cuDeviceGetAttribute(&v, a, d->handle) == CUDA_SUCCESS ? v : 0;
    };
    d->compute_major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    d->compute_minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    hetrt::sdk::DeviceFacts& f = d->facts;
    f.multiprocessor_count = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    f.max_threads_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    f.warp_size = attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
    const int shared_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
    f.max_shared_memory_per_block = shared_per_block;
    d->shared_per_block_optin = std::max(shared_per_block, attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN));
    f.max_clock_rate_khz = attr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
    f.copy_streams = attr(CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT) > 0;
    d->maps_host_memory =
        attr(CU_DEVICE_ATTRIBUTE_INTEGRATED) != 0 && attr(CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY) != 0;
    f.host_unified_memory = d->maps_host_memory;
    size_t total = 0;
    f.total_memory = cu->cuDeviceTotalMem(&total, d->handle) == CUDA_SUCCESS ? static_cast<int64_t>(total) : f.kUnknown;
    f.max_alignment = 256;  // cuMemAlloc's, and pinned pages
    f.compute_version = std::to_string(d->compute_major) + "." + std::to_string(d->compute_minor);
    f.driver_version = VersionString(cu->version);
    f.name = d->name + ", compute " + f.compute_version + ", " + std::to_string(f.multiprocessor_count) +
             " SMs, driver " + f.driver_version;
    list.Add(std::move(d));
  }
}

hetrt_error_t* hetrt_instance::NativeStream(DLDevice device, hetrt_stream* current, void** out) {
  hetrt::cuda::Device* d = nullptr;
  // The context current on this thread too: the caller launches in it.
  if (hetrt_error_t* e = hetrt::cuda::ActiveDevice(this, device, &d)) return e;
  CUstream stream = nullptr;
  if (hetrt_error_t* e = hetrt::cuda::StreamOf(d, current, &stream)) return e;
  *out = stream;
  return nullptr;
}

hetrt_error_t* hetrt_instance::Activate(hetrt::cuda::Device* d) {
  const hetrt::cuda::Driver* cu = driver_;
  if (!d->context_ready.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(d->context_mutex);
    if (!d->context_ready.load(std::memory_order_relaxed)) {
      if (CUresult r = cu->cuDevicePrimaryCtxRetain(&d->context, d->handle))
        return Error(d, "retaining the primary context", r);
      // The clock stream at the greatest priority: a sample is not scheduled
      // behind kernels pending on other streams.
      int least = 0, greatest = 0;
      CUresult r = cu->cuCtxSetCurrent(d->context);
      if (r == CUDA_SUCCESS) r = cu->cuStreamCreate(&d->stream, CU_STREAM_NON_BLOCKING);
      if (r == CUDA_SUCCESS) r = cu->cuCtxGetStreamPriorityRange(&least, &greatest);
      if (r == CUDA_SUCCESS) r = cu->cuStreamCreateWithPriority(&d->clock_stream, CU_STREAM_NON_BLOCKING, greatest);
      if (r != CUDA_SUCCESS) {
        if (d->stream) cu->cuStreamDestroy(d->stream);
        d->stream = nullptr;
        cu->cuDevicePrimaryCtxRelease(d->handle);
        return Error(d, "setting up the primary context", r);
      }
      d->context_ready.store(true, std::memory_order_release);
      return nullptr;
    }
  }
  CUcontext current = nullptr;
  if (cu->cuCtxGetCurrent(&current) == CUDA_SUCCESS && current == d->context) return nullptr;
  const CUresult r = cu->cuCtxSetCurrent(d->context);
  return r == CUDA_SUCCESS ? nullptr : Error(d, "cuCtxSetCurrent", r);
}

hetrt_error_t* hetrt_instance::Error(const hetrt::cuda::Device* d, const std::string& what, CUresult result) const {
  const hetrt_status_code_t code =
      result == CUDA_ERROR_OUT_OF_MEMORY ? HETRT_STATUS_RESOURCE_EXHAUSTED : HETRT_STATUS_INTERNAL;
  return hetrt::cuda::MakeError(code, "cuda:" + std::to_string(d ? d->id : -1) + (d ? " (" + d->name + ")" : "") +
                                          ": " + what + ": " + hetrt::cuda::ResultText(driver_, result));
}

// Reclaims what the core left (memory, workspace), then the streams and the
// primary contexts.
hetrt_instance::~hetrt_instance() {
  using namespace hetrt::cuda;
  const Driver* cu = driver_;
  for (auto& [address, a] : allocations) {
    if (hetrt_error_t* e = Activate(devices.at(a.device_id))) {
      hetrt::sdk::DiscardError(e);  // leaks the memory rather than touch a context that is gone
      continue;
    }
    if (a.kind == HETRT_MEMORY_DEVICE)
      cu->cuMemFree(static_cast<CUdeviceptr>(address));
    else
      cu->cuMemFreeHost(a.host);
  }
  for (auto& d : devices.discovered()) {
    if (!d->context_ready.load()) continue;
    if (hetrt_error_t* e = Activate(d.get())) {
      hetrt::sdk::DiscardError(e);
      continue;
    }
    cu->cuStreamSynchronize(d->stream);
    d->workspace.DestroyAll([cu](void* data) { cu->cuMemFree(reinterpret_cast<CUdeviceptr>(data)); });
    if (d->anchor) cu->cuEventDestroy(d->anchor);
    cu->cuStreamDestroy(d->clock_stream);
    cu->cuStreamDestroy(d->stream);
    cu->cuDevicePrimaryCtxRelease(d->handle);
  }
}
