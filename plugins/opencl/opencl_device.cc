#include "opencl_device.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

// An event: a marker enqueued at record time (NULL until then). Its profiling
// end time is the timestamp; its status carries the error of the work before it.
struct hetrt_event {
  hetrt::opencl::Device* device = nullptr;  // of the queue it was last recorded on
  cl_event marker = nullptr;
};

namespace hetrt::opencl {
namespace {

// The entries of the device table.
struct DeviceEntries : sdk::CommonDeviceEntries<hetrt_instance, hetrt_stream> {
  HETRT_SDK_DEVICE_ENTRIES
};

// ---- Helpers ----

// A string property through a clGet*Info call (`get`): its size first, then
// its bytes, without the terminating NULs; "" when it cannot be read.
template <class Object, class Info, class GetInfo>
std::string InfoString(GetInfo get, Object object, Info what) {
  size_t size = 0;
  if (get(object, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string s(size, '\0');
  get(object, what, size, s.data(), nullptr);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

std::string DeviceString(cl_device_id d, cl_device_info what) { return InfoString(clGetDeviceInfo, d, what); }

std::string PlatformString(cl_platform_id p, cl_platform_info what) { return InfoString(clGetPlatformInfo, p, what); }

template <class T>
T DeviceValue(cl_device_id d, cl_device_info what) {
  T v{};
  if (clGetDeviceInfo(d, what, sizeof v, &v, nullptr) != CL_SUCCESS) return T{};
  return v;
}

// The queue of `stream` on `d` (NULL: d's default queue).
hetrt_error_t* QueueOf(Device* d, hetrt_stream* stream, cl_command_queue* out) {
  if (stream != nullptr && stream->device != d)
    return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "the stream belongs to another OpenCL device than " + d->name);
  *out = stream ? stream->queue : d->queue;
  return nullptr;
}

// The device named by a stream entry's arguments and the queue its stream stands for.
template <class Args>
hetrt_error_t* FindQueue(const Args* args, Device** device, cl_command_queue* queue) {
  if (hetrt_error_t* e = args->self->devices.Find(args->device, device)) return e;
  return QueueOf(*device, args->stream, queue);
}

// A CL_MEM_ALLOC_HOST_PTR buffer mapped once for the life of the allocation.
hetrt_error_t* CreateMapped(Device* d, size_t size, uint64_t alignment, cl_mem* mem, void** host) {
  cl_int status = CL_SUCCESS;
  *mem = clCreateBuffer(d->context, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, size, nullptr, &status);
  if (status != CL_SUCCESS) return ClError("clCreateBuffer", status);
  *host =
      clEnqueueMapBuffer(d->queue, *mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, size, 0, nullptr, nullptr, &status);
  if (status != CL_SUCCESS) {
    clReleaseMemObject(*mem);
    return ClError("clEnqueueMapBuffer", status);
  }
  if (alignment > 1 && reinterpret_cast<uintptr_t>(*host) % alignment != 0) {
    clEnqueueUnmapMemObject(d->queue, *mem, *host, 0, nullptr, nullptr);
    clReleaseMemObject(*mem);
    return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "the OpenCL driver maps host memory at an address not aligned to " +
                                                        std::to_string(alignment) + " bytes");
  }
  return nullptr;
}

// ---- Device table ----

hetrt_error_t* DeviceEntries::DeviceAttribute(hetrt_device_attribute_args_t* args) {
  Device* d = nullptr;
  if (hetrt_error_t* e = args->self->devices.Find(args->device, &d)) return e;
  return d->facts.Answer(args, "opencl:" + std::to_string(args->device.device_id));
}

hetrt_error_t* DeviceEntries::Allocate(hetrt_allocate_args_t* args) {
  hetrt_instance* inst = args->self;
  Device* d = nullptr;
  if (hetrt_error_t* e = inst->devices.Find(args->device, &d)) return e;
  // OpenCL refuses zero-sized buffers; a 1-byte one keeps every tensor addressable.
  const size_t size = args->nbytes ? static_cast<size_t>(args->nbytes) : 1;
  cl_int status = CL_SUCCESS;
  switch (args->kind) {
    case HETRT_MEMORY_DEVICE: {
      auto desc = std::make_unique<BufferDescriptor>();
      desc->buffer = clCreateBuffer(d->context, CL_MEM_READ_WRITE, size, nullptr, &status);
      if (status != CL_SUCCESS) return ClError("clCreateBuffer", status);
      desc->size = static_cast<size_t>(args->nbytes);
      desc->device_id = args->device.device_id;
      desc->allocated_by = inst;
      args->data = desc.release();
      args->host_pointer = nullptr;
      break;
    }
    case HETRT_MEMORY_HOST_VISIBLE: {
      if (!d->host_unified)
        return MakeError(HETRT_STATUS_UNIMPLEMENTED, "HOST_VISIBLE memory needs a device with host-unified memory; " +
                                                         d->name + " has CL_DEVICE_HOST_UNIFIED_MEMORY false");
      auto desc = std::make_unique<BufferDescriptor>();
      if (hetrt_error_t* e = CreateMapped(d, size, args->alignment, &desc->buffer, &desc->host)) return e;
      desc->size = static_cast<size_t>(args->nbytes);
      desc->device_id = args->device.device_id;
      desc->allocated_by = inst;
      args->host_pointer = desc->host;
      args->data = desc.release();
      break;
    }
    case HETRT_MEMORY_HOST_PINNED: {
      cl_mem mem = nullptr;
      void* host = nullptr;
      if (hetrt_error_t* e = CreateMapped(d, size, args->alignment, &mem, &host)) return e;
      try {
        inst->pinned.Add(host, hetrt_instance::Pinned{mem, args->device.device_id, args->nbytes});
      } catch (...) {
        clEnqueueUnmapMemObject(d->queue, mem, host, 0, nullptr, nullptr);
        clReleaseMemObject(mem);
        throw;
      }
      args->data = args->host_pointer = host;
      break;
    }
    default:
      return MakeError(HETRT_STATUS_INVALID_ARGUMENT,
                       "unknown memory kind " + std::to_string(static_cast<int>(args->kind)));
  }
  d->memory_counters.Allocated(args->nbytes);
  return nullptr;
}

hetrt_error_t* DeviceEntries::Free(hetrt_free_args_t* args) {
  hetrt_instance* inst = args->self;
  cl_int status = CL_SUCCESS;
  if (args->kind == HETRT_MEMORY_HOST_PINNED) {
    const std::optional<hetrt_instance::Pinned> taken = inst->pinned.Take(args->data);
    if (!taken) return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "not HOST_PINNED memory of this OpenCL instance");
    const hetrt_instance::Pinned& p = *taken;
    Device* owner = inst->devices.at(p.device_id);
    status = clEnqueueUnmapMemObject(owner->queue, p.buffer, args->data, 0, nullptr, nullptr);
    const cl_int released = clReleaseMemObject(p.buffer);
    owner->memory_counters.Freed(p.nbytes);
    if (status != CL_SUCCESS) return ClError("clEnqueueUnmapMemObject", status);
    return released == CL_SUCCESS ? nullptr : ClError("clReleaseMemObject", released);
  }
  auto* desc = static_cast<BufferDescriptor*>(args->data);
  if (desc->allocated_by != inst)
    return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "not memory this OpenCL instance allocated");
  desc->allocated_by = nullptr;
  Device* owner = inst->devices.at(desc->device_id);  // allocated by this instance: one of its devices
  // Releasing is safe right after: the buffer goes once queued commands are done.
  if (desc->host) status = clEnqueueUnmapMemObject(owner->queue, desc->buffer, desc->host, 0, nullptr, nullptr);
  const cl_int released = clReleaseMemObject(desc->buffer);
  owner->memory_counters.Freed(desc->size);
  delete desc;
  if (status != CL_SUCCESS) return ClError("clEnqueueUnmapMemObject", status);
  return released == CL_SUCCESS ? nullptr : ClError("clReleaseMemObject", released);
}

// One side of a copy: an OpenCL buffer, or host bytes (a CPU pointer, or this
// instance's HOST_PINNED memory even when labelled with the OpenCL device).
struct Side {
  BufferDescriptor* buffer = nullptr;
  uint8_t* host = nullptr;
};

hetrt_error_t* ResolveSide(hetrt_instance* inst, const sdk::CopySide& side, Side* out) {
  uint8_t* const host = const_cast<uint8_t*>(static_cast<const uint8_t*>(side.ptr)) + side.offset;
  if (side.device.device_type == kDLCPU) {
    out->host = host;
    return nullptr;
  }
  if (hetrt_error_t* e = side.CheckDeviceType(kDLOpenCL, "an OpenCL")) return e;
  if (const std::optional<hetrt_instance::Pinned> p = inst->pinned.Find(side.ptr)) {
    if (side.Exceeds(p->nbytes)) return side.RangeError(p->nbytes, "pinned buffer");
    out->host = host;
    return nullptr;
  }
  auto* desc = const_cast<BufferDescriptor*>(static_cast<const BufferDescriptor*>(side.ptr));
  if (side.Exceeds(desc->size)) return side.RangeError(desc->size);
  out->buffer = desc;
  return nullptr;
}

hetrt_error_t* DeviceEntries::Copy(hetrt_copy_args_t* a) {
  hetrt_instance* inst = a->self;
  Side src, dst;
  if (hetrt_error_t* e = sdk::ResolveCopySides(*a, ResolveSide, &src, &dst)) return e;
  if (!src.buffer && !dst.buffer)
    return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "neither side of the copy is an OpenCL buffer");
  Device* d = nullptr;
  if (hetrt_error_t* e = inst->devices.Find(src.buffer ? a->src_device : a->dst_device, &d)) return e;
  cl_command_queue q = nullptr;
  if (hetrt_error_t* e = QueueOf(d, a->stream, &q)) return e;
  const cl_bool blocking = (a->flags & HETRT_COPY_BLOCKING) ? CL_TRUE : CL_FALSE;
  cl_int status = CL_SUCCESS;
  if (a->nbytes == 0) {  // OpenCL refuses empty transfers; still honour the ordering promise
    status = blocking ? clFinish(q) : CL_SUCCESS;
    return status == CL_SUCCESS ? nullptr : ClError("clFinish", status);
  }
  if (src.buffer && dst.buffer) {
    Device* dd = nullptr;
    if (hetrt_error_t* e = inst->devices.Find(a->dst_device, &dd)) return e;
    if (dd->context == d->context) {
      status = clEnqueueCopyBuffer(q, src.buffer->buffer, dst.buffer->buffer, a->src_offset, a->dst_offset, a->nbytes,
                                   0, nullptr, nullptr);
      if (status != CL_SUCCESS) return ClError("clEnqueueCopyBuffer", status);
      status = blocking ? clFinish(q) : CL_SUCCESS;
      return status == CL_SUCCESS ? nullptr : ClError("clFinish", status);
    }
    // Different platforms share no context: stage through host memory, blocking.
    std::vector<uint8_t> staging(a->nbytes);
    status = clEnqueueReadBuffer(q, src.buffer->buffer, CL_TRUE, a->src_offset, a->nbytes, staging.data(), 0, nullptr,
                                 nullptr);
    if (status != CL_SUCCESS) return ClError("clEnqueueReadBuffer", status);
    status = clEnqueueWriteBuffer(dd->queue, dst.buffer->buffer, CL_TRUE, a->dst_offset, a->nbytes, staging.data(), 0,
                                  nullptr, nullptr);
    return status == CL_SUCCESS ? nullptr : ClError("clEnqueueWriteBuffer", status);
  }
  if (dst.buffer) {
    status =
        clEnqueueWriteBuffer(q, dst.buffer->buffer, blocking, a->dst_offset, a->nbytes, src.host, 0, nullptr, nullptr);
    return status == CL_SUCCESS ? nullptr : ClError("clEnqueueWriteBuffer", status);
  }
  status =
      clEnqueueReadBuffer(q, src.buffer->buffer, blocking, a->src_offset, a->nbytes, dst.host, 0, nullptr, nullptr);
  return status == CL_SUCCESS ? nullptr : ClError("clEnqueueReadBuffer", status);
}

// ---- Streams ----

hetrt_error_t* DeviceEntries::StreamCreate(hetrt_stream_create_args_t* args) {
  Device* d = nullptr;
  if (hetrt_error_t* e = args->self->devices.Find(args->device, &d)) return e;
  // A COPY stream is just another in-order queue: OpenCL exposes no copy engines.
  auto stream = std::make_unique<hetrt_stream>();
  cl_int status = CL_SUCCESS;
  stream->queue = clCreateCommandQueue(d->context, d->id, CL_QUEUE_PROFILING_ENABLE, &status);
  if (status != CL_SUCCESS) return ClError("clCreateCommandQueue", status);
  stream->device = d;
  args->stream = stream.release();
  return nullptr;
}

hetrt_error_t* DeviceEntries::StreamDestroy(hetrt_stream_args_t* args) {
  hetrt_stream* stream = args->stream;
  if (stream == nullptr) return nullptr;  // the default stream belongs to the device
  // Forget it as this thread's current stream (other threads must reset theirs).
  Current::Forget(stream);
  // Its work done, workspace last freed on it is free for any queue.
  const cl_int finished = clFinish(stream->queue);
  if (stream->device != nullptr) stream->device->workspace.ForgetStream(stream->queue);
  const cl_int released = clReleaseCommandQueue(stream->queue);
  delete stream;
  if (finished != CL_SUCCESS) return ClError("clFinish (stream_destroy)", finished);
  return released == CL_SUCCESS ? nullptr : ClError("clReleaseCommandQueue", released);
}

hetrt_error_t* DeviceEntries::StreamSynchronize(hetrt_stream_args_t* args) {
  Device* d = nullptr;
  cl_command_queue q = nullptr;
  if (hetrt_error_t* e = FindQueue(args, &d, &q)) return e;
  const cl_int status = clFinish(q);
  return status == CL_SUCCESS ? nullptr : ClError("clFinish", status);
}

hetrt_error_t* DeviceEntries::StreamWaitEvent(hetrt_stream_wait_event_args_t* args) {
  Device* d = nullptr;
  cl_command_queue q = nullptr;
  if (hetrt_error_t* e = FindQueue(args, &d, &q)) return e;
  hetrt_event* event = args->event;
  if (event->marker == nullptr) return nullptr;  // never recorded: complete
  if (event->device->context != d->context)
    return MakeError(HETRT_STATUS_UNIMPLEMENTED,
                     "an OpenCL queue cannot wait for an event of another context "
                     "(another platform or instance): " +
                         event->device->name + " -> " + d->name);
  const cl_int status = clEnqueueBarrierWithWaitList(q, 1, &event->marker, nullptr);
  return status == CL_SUCCESS ? nullptr : ClError("clEnqueueBarrierWithWaitList", status);
}

hetrt_error_t* DeviceEntries::StreamSetCurrent(hetrt_stream_current_args_t* args) {
  const hetrt_instance* inst = args->self;
  Device* d = nullptr;
  cl_command_queue q = nullptr;
  if (hetrt_error_t* e = FindQueue(args, &d, &q)) return e;
  if (!Current::Set(inst->serial, args->device.device_id, args->stream, &args->previous))
    return Current::TableFull("OpenCL");
  return nullptr;
}

// ---- Events ----

hetrt_error_t* EventFailed(cl_int status) {
  return MakeError(HETRT_STATUS_INTERNAL, std::string("OpenCL work before the event failed: ") + ClErrorName(status) +
                                              " (" + std::to_string(status) + ")");
}

// Waits for a recorded event and returns the error of the work it follows.
hetrt_error_t* WaitEvent(hetrt_event* e, int64_t poll_us = 0) {
  // Poll briefly before sleeping in the driver: work that ends within the
  // budget is seen at once instead of after this thread's wake-up.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(poll_us);
  while (poll_us > 0) {
    cl_int polled = CL_QUEUED;
    if (clGetEventInfo(e->marker, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof polled, &polled, nullptr) != CL_SUCCESS ||
        polled <= CL_COMPLETE || std::chrono::steady_clock::now() > deadline)
      break;
    std::this_thread::yield();
  }
  const cl_int waited = clWaitForEvents(1, &e->marker);
  cl_int status = CL_SUCCESS;
  const cl_int info = clGetEventInfo(e->marker, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
  if (info != CL_SUCCESS) return ClError("clGetEventInfo", info);
  if (status < 0) return EventFailed(status);
  return waited == CL_SUCCESS ? nullptr : ClError("clWaitForEvents", waited);
}

hetrt_error_t* MarkerEnd(hetrt_event* e, cl_ulong* out) {
  const cl_int status = clGetEventProfilingInfo(e->marker, CL_PROFILING_COMMAND_END, sizeof *out, out, nullptr);
  return status == CL_SUCCESS ? nullptr : ClError("clGetEventProfilingInfo", status);
}

hetrt_error_t* DeviceEntries::EventCreate(hetrt_event_create_args_t* args) {
  Device* d = nullptr;
  if (hetrt_error_t* e = args->self->devices.Find(args->device, &d)) return e;
  // Every queue profiles, so HETRT_EVENT_TIMING needs nothing extra.
  args->event = new hetrt_event{d, nullptr};
  return nullptr;
}

hetrt_error_t* DeviceEntries::EventDestroy(hetrt_event_args_t* args) {
  hetrt_event* e = args->event;
  if (e && e->marker) clReleaseEvent(e->marker);
  delete e;
  return nullptr;
}

hetrt_error_t* DeviceEntries::EventRecord(hetrt_event_record_args_t* args) {
  Device* d = nullptr;
  cl_command_queue q = nullptr;
  if (hetrt_error_t* e = FindQueue(args, &d, &q)) return e;
  cl_event marker = nullptr;
  const cl_int status = clEnqueueMarkerWithWaitList(q, 0, nullptr, &marker);
  if (status != CL_SUCCESS) return ClError("clEnqueueMarkerWithWaitList", status);
  hetrt_event* e = args->event;
  if (e->marker) clReleaseEvent(e->marker);
  e->marker = marker;
  e->device = d;
  return nullptr;
}

hetrt_error_t* DeviceEntries::EventQuery(hetrt_event_args_t* args) {
  hetrt_event* e = args->event;
  args->complete = 1;
  if (e->marker == nullptr) return nullptr;  // never recorded: complete
  cl_int status = CL_SUCCESS;
  const cl_int info = clGetEventInfo(e->marker, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
  if (info != CL_SUCCESS) return ClError("clGetEventInfo", info);
  if (status < 0) return EventFailed(status);
  args->complete = status == CL_COMPLETE;
  return nullptr;
}

hetrt_error_t* DeviceEntries::EventSynchronize(hetrt_event_args_t* args) {
  hetrt_event* e = args->event;
  args->complete = 1;
  return e->marker ? WaitEvent(e, args->self->WaitPollUs()) : nullptr;
}

hetrt_error_t* DeviceEntries::EventElapsed(hetrt_event_elapsed_args_t* args) {
  hetrt_event* s = args->start;
  hetrt_event* e = args->end;
  if (!s || !e || !s->marker || !e->marker)
    return MakeError(HETRT_STATUS_FAILED_PRECONDITION, "event_elapsed_ms needs two recorded events");
  if (hetrt_error_t* err = WaitEvent(s)) return err;
  if (hetrt_error_t* err = WaitEvent(e)) return err;
  cl_ulong t0 = 0, t1 = 0;
  if (hetrt_error_t* err = MarkerEnd(s, &t0)) return err;
  if (hetrt_error_t* err = MarkerEnd(e, &t1)) return err;
  args->milliseconds = static_cast<double>(static_cast<int64_t>(t1 - t0)) / 1e6;
  return nullptr;
}

hetrt_error_t* DeviceEntries::EventTimestamp(hetrt_event_timestamp_args_t* args) {
  hetrt_event* e = args->event;
  if (!e || !e->marker) return MakeError(HETRT_STATUS_FAILED_PRECONDITION, "event_timestamp needs a recorded event");
  if (hetrt_error_t* err = WaitEvent(e)) return err;
  cl_ulong t = 0;
  if (hetrt_error_t* err = MarkerEnd(e, &t)) return err;
  args->device_ns = t;
  return nullptr;
}

// The device stamps a marker's QUEUED time during the enqueue call, so it lies
// between host readings taken just before and just after: keep the tightest of
// a few samples. Runs on a queue of its own so it never waits behind user work.
hetrt_error_t* DeviceEntries::DeviceClock(hetrt_device_clock_args_t* args) {
  Device* d = nullptr;
  if (hetrt_error_t* e = args->self->devices.Find(args->device, &d)) return e;
  uint64_t best_window = UINT64_MAX;
  for (int i = 0; i < 5; ++i) {
    cl_event marker = nullptr;
    const uint64_t t0 = sdk::MonotonicNs();
    cl_int status = clEnqueueMarkerWithWaitList(d->clock_queue, 0, nullptr, &marker);
    const uint64_t t1 = sdk::MonotonicNs();
    if (status != CL_SUCCESS) return ClError("clEnqueueMarkerWithWaitList", status);
    cl_ulong queued = 0;
    status = clWaitForEvents(1, &marker);
    if (status == CL_SUCCESS)
      status = clGetEventProfilingInfo(marker, CL_PROFILING_COMMAND_QUEUED, sizeof queued, &queued, nullptr);
    clReleaseEvent(marker);
    if (status != CL_SUCCESS) return ClError("clGetEventProfilingInfo", status);
    if (t1 - t0 < best_window) {
      best_window = t1 - t0;
      args->host_ns = t0 + (t1 - t0) / 2;
      args->device_ns = queued;
      args->uncertainty_ns = (t1 - t0 + 1) / 2;
    }
  }
  return nullptr;
}

// ---- Workspace pool ----

hetrt_error_t* DeviceEntries::WorkspaceAlloc(hetrt_workspace_args_t* args) {
  Device* d = nullptr;
  if (hetrt_error_t* e = args->self->devices.Find(args->device, &d)) return e;
  auto create = [d, id = args->device.device_id](uint64_t bytes, void** data) -> hetrt_error_t* {
    auto desc = std::make_unique<BufferDescriptor>();
    desc->size = static_cast<size_t>(bytes);
    desc->device_id = id;
    cl_int status = CL_SUCCESS;
    desc->buffer = clCreateBuffer(d->context, CL_MEM_READ_WRITE, desc->size, nullptr, &status);
    if (status != CL_SUCCESS) return ClError("clCreateBuffer (workspace)", status);
    *data = desc.release();
    return nullptr;
  };
  const cl_command_queue queue = LaunchQueue(args->self, d, args->device.device_id);
  return d->workspace.Allocate(args->nbytes, queue, "OpenCL", create, ReleaseWorkspace, &args->data);
}

hetrt_error_t* DeviceEntries::WorkspaceFree(hetrt_workspace_args_t* args) {
  Device* d = nullptr;
  if (hetrt_error_t* e = args->self->devices.Find(args->device, &d)) return e;
  return d->workspace.Free(args->data, LaunchQueue(args->self, d, args->device.device_id), "OpenCL");
}

}  // namespace

void ReleaseWorkspace(void* data) {
  auto* desc = static_cast<BufferDescriptor*>(data);
  clReleaseMemObject(desc->buffer);
  delete desc;
}

const hetrt_device_api_t kDeviceApi = sdk::DeviceTable<DeviceEntries, kLabel>();

}  // namespace hetrt::opencl

// ---- Instance: discovery and teardown ----

void hetrt_instance::Discover(hetrt::sdk::DeviceList<hetrt::opencl::Device>& list) {
  // The wait budget is measured now, before any work runs (hetrt/sdk/wake_up.h).
  if (wait_poll_us.load(std::memory_order_relaxed) == hetrt::sdk::PollBudget::kAuto) poll_budget.Measure();
  using hetrt::opencl::Device;
  using hetrt::opencl::DeviceString;
  using hetrt::opencl::DeviceValue;
  using hetrt::opencl::PlatformString;
  cl_uint num_platforms = 0;
  cl_int status = clGetPlatformIDs(0, nullptr, &num_platforms);
  if (status == -1001 /* CL_PLATFORM_NOT_FOUND_KHR */ || (status == CL_SUCCESS && num_platforms == 0)) {
    list.SetUnavailable(
        "no OpenCL platform: the ICD loader found no vendor driver (.icd files in /etc/OpenCL/vendors or "
        "$OCL_ICD_VENDORS; Debian: pocl-opencl-icd for CPUs)");
    return;
  }
  if (status != CL_SUCCESS) {
    list.SetUnavailable(std::string("clGetPlatformIDs failed: ") + hetrt::opencl::ClErrorName(status));
    return;
  }
  std::vector<cl_platform_id> platforms(num_platforms);
  clGetPlatformIDs(num_platforms, platforms.data(), nullptr);
  std::string empty_platforms, failures;
  for (cl_platform_id p : platforms) {
    cl_uint n = 0;
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &n) != CL_SUCCESS || n == 0) {
      empty_platforms += (empty_platforms.empty() ? "" : ", ") + PlatformString(p, CL_PLATFORM_NAME);
      continue;
    }
    std::vector<cl_device_id> ids(n);
    clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, n, ids.data(), nullptr);
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(p), 0};
    cl_context ctx = clCreateContext(props, n, ids.data(), nullptr, nullptr, &status);
    if (status != CL_SUCCESS) {
      failures += std::string(failures.empty() ? "" : "; ") + "clCreateContext failed on " +
                  PlatformString(p, CL_PLATFORM_NAME) + ": " + hetrt::opencl::ClErrorName(status);
      continue;
    }
    contexts_.push_back(ctx);
    for (cl_device_id id : ids) {
      auto d = std::make_unique<Device>();
      d->queue = clCreateCommandQueue(ctx, id, CL_QUEUE_PROFILING_ENABLE, &status);
      if (status != CL_SUCCESS) continue;
      d->clock_queue = clCreateCommandQueue(ctx, id, CL_QUEUE_PROFILING_ENABLE, &status);
      if (status != CL_SUCCESS) {
        clReleaseCommandQueue(d->queue);
        continue;
      }
      d->platform = p;
      d->id = id;
      d->context = ctx;
      d->name = DeviceString(id, CL_DEVICE_NAME) + " (" + PlatformString(p, CL_PLATFORM_NAME) + ")";
      d->version = DeviceString(id, CL_DRIVER_VERSION);
      hetrt::sdk::DeviceFacts& f = d->facts;
      f.name = d->name + ", driver " + d->version;
      f.driver_version = d->version;
      f.compute_version = DeviceString(id, CL_DEVICE_VERSION);
      d->host_unified = DeviceValue<cl_bool>(id, CL_DEVICE_HOST_UNIFIED_MEMORY) == CL_TRUE;
      f.host_unified_memory = d->host_unified;
      f.total_memory = static_cast<int64_t>(DeviceValue<cl_ulong>(id, CL_DEVICE_GLOBAL_MEM_SIZE));
      f.max_shared_memory_per_block = static_cast<int64_t>(DeviceValue<cl_ulong>(id, CL_DEVICE_LOCAL_MEM_SIZE));
      f.max_threads_per_block = static_cast<int64_t>(DeviceValue<size_t>(id, CL_DEVICE_MAX_WORK_GROUP_SIZE));
      f.multiprocessor_count = DeviceValue<cl_uint>(id, CL_DEVICE_MAX_COMPUTE_UNITS);
      f.max_clock_rate_khz = int64_t{DeviceValue<cl_uint>(id, CL_DEVICE_MAX_CLOCK_FREQUENCY)} * 1000;
      f.copy_streams = 1;
      // In bits; 64 bytes (what PoCL maps at) where the driver does not say.
      // Pinned memory is where the driver maps it: on this boundary
      // (CreateMapped refuses a mapping that misses the alignment asked).
      const cl_uint align_bits = DeviceValue<cl_uint>(id, CL_DEVICE_MEM_BASE_ADDR_ALIGN);
      f.max_alignment = align_bits >= 8 ? align_bits / 8 : 64;
      list.Add(std::move(d));
    }
  }
  if (list.discovered().empty())
    list.SetUnavailable(failures.empty() ? "OpenCL platform(s) " + empty_platforms + " report no devices" : failures);
}

hetrt_error_t* hetrt_instance::NativeStream(DLDevice device, hetrt_stream* current, void** out) {
  hetrt::opencl::Device* d = nullptr;
  if (hetrt_error_t* e = devices.Find(device, &d)) return e;
  cl_command_queue queue = nullptr;
  if (hetrt_error_t* e = hetrt::opencl::QueueOf(d, current, &queue)) return e;
  *out = queue;
  return nullptr;
}

// Reclaims what the core left (pinned memory, workspace buffers), then the
// queues and contexts; root devices and platforms need no release.
hetrt_instance::~hetrt_instance() {
  for (auto& [host_ptr, p] : pinned.TakeAll()) {
    clEnqueueUnmapMemObject(devices.at(p.device_id)->queue, p.buffer, host_ptr, 0, nullptr, nullptr);
    clReleaseMemObject(p.buffer);
  }
  for (auto& d : devices.discovered()) {
    clFinish(d->queue);
    d->workspace.DestroyAll(hetrt::opencl::ReleaseWorkspace);
    clReleaseCommandQueue(d->clock_queue);
    clReleaseCommandQueue(d->queue);
  }
  for (cl_context c : contexts_) clReleaseContext(c);
}
