#include "opencl_device.h"

#include <chrono>
#include <cstring>
#include <mutex>
#include <vector>

namespace hetrt::opencl {
namespace {

thread_local int t_current_device = 0;

std::string DeviceString(cl_device_id d, cl_device_info what) {
  size_t size = 0;
  if (clGetDeviceInfo(d, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string s(size, '\0');
  clGetDeviceInfo(d, what, size, s.data(), nullptr);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

std::string PlatformString(cl_platform_id p, cl_platform_info what) {
  size_t size = 0;
  if (clGetPlatformInfo(p, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string s(size, '\0');
  clGetPlatformInfo(p, what, size, s.data(), nullptr);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

hetrt_error_t* CheckDevice(DLDevice device, Device** out) {
  if (device.device_type != kDLOpenCL)
    return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "not an OpenCL device (type " + std::to_string(device.device_type) + ")");
  Device* d = Devices::Get().at(device.device_id);
  if (d == nullptr)
    return MakeError(HETRT_STATUS_NOT_FOUND, "no OpenCL device " + std::to_string(device.device_id) + " (" +
                                                 std::to_string(Devices::Get().count()) + " found)");
  *out = d;
  return nullptr;
}

cl_command_queue QueueOf(Device* d, hetrt_stream_t* stream) {
  return stream ? reinterpret_cast<cl_command_queue>(stream) : d->queue;
}

hetrt_error_t* DeviceCount(hetrt_device_count_args_t* args) {
  if (args->device_type != kDLOpenCL)
    return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "the OpenCL plugin serves device type 4 only");
  args->count = Devices::Get().count();
  args->unavailable_reason = args->count == 0 ? Devices::Get().unavailable_reason().c_str() : nullptr;
  return nullptr;
}

hetrt_error_t* DeviceName(DLDevice device, char* buffer, size_t size) {
  Device* d = nullptr;
  if (hetrt_error_t* e = CheckDevice(device, &d)) return e;
  std::string name = d->name + ", driver " + d->version;
  if (size > 0) {
    name.resize(std::min(name.size(), size - 1));
    std::memcpy(buffer, name.c_str(), name.size() + 1);
  }
  return nullptr;
}

hetrt_error_t* Allocate(hetrt_allocate_args_t* args) {
  Device* d = nullptr;
  if (hetrt_error_t* e = CheckDevice(args->device, &d)) return e;
  cl_int status = CL_SUCCESS;
  // OpenCL refuses zero-sized buffers; a 1-byte one keeps every tensor addressable.
  cl_mem mem = clCreateBuffer(d->context, CL_MEM_READ_WRITE, args->nbytes ? args->nbytes : 1, nullptr, &status);
  if (status != CL_SUCCESS) return ClError("clCreateBuffer", status);
  args->data = new BufferDescriptor{mem, static_cast<size_t>(args->nbytes), args->device.device_id};
  return nullptr;
}

hetrt_error_t* Free(DLDevice, void* data) {
  auto* desc = static_cast<BufferDescriptor*>(data);
  if (desc == nullptr) return nullptr;
  cl_int status = clReleaseMemObject(desc->buffer);
  delete desc;
  return status == CL_SUCCESS ? nullptr : ClError("clReleaseMemObject", status);
}

hetrt_error_t* CheckRange(const BufferDescriptor* desc, uint64_t offset, uint64_t nbytes, const char* side) {
  if (desc == nullptr) return MakeError(HETRT_STATUS_INVALID_ARGUMENT, std::string("NULL OpenCL ") + side + " buffer");
  if (offset > desc->size || nbytes > desc->size - offset)
    return MakeError(HETRT_STATUS_OUT_OF_RANGE, std::string("copy ") + side + " range [" + std::to_string(offset) +
                                                    ", +" + std::to_string(nbytes) + ") exceeds the " +
                                                    std::to_string(desc->size) + "-byte buffer");
  return nullptr;
}

hetrt_error_t* Copy(hetrt_copy_args_t* a) {
  const bool src_cl = a->src_device.device_type == kDLOpenCL;
  const bool dst_cl = a->dst_device.device_type == kDLOpenCL;
  const auto* src = static_cast<const BufferDescriptor*>(a->src);
  auto* dst = static_cast<BufferDescriptor*>(a->dst);
  if (src_cl) if (hetrt_error_t* e = CheckRange(src, a->src_offset, a->nbytes, "source")) return e;
  if (dst_cl) if (hetrt_error_t* e = CheckRange(dst, a->dst_offset, a->nbytes, "destination")) return e;
  Device* d = nullptr;
  if (hetrt_error_t* e = CheckDevice(src_cl ? a->src_device : a->dst_device, &d)) return e;
  cl_command_queue q = QueueOf(d, a->stream);
  cl_int status = CL_SUCCESS;
  if (src_cl && dst_cl) {
    Device* dd = nullptr;
    if (hetrt_error_t* e = CheckDevice(a->dst_device, &dd)) return e;
    if (dd->context == d->context) {
      status = clEnqueueCopyBuffer(q, src->buffer, dst->buffer, a->src_offset, a->dst_offset, a->nbytes, 0, nullptr, nullptr);
      if (status == CL_SUCCESS) status = clFinish(q);
      return status == CL_SUCCESS ? nullptr : ClError("clEnqueueCopyBuffer", status);
    }
    // Different platforms share no context: stage through host memory.
    std::vector<uint8_t> staging(a->nbytes);
    status = clEnqueueReadBuffer(q, src->buffer, CL_TRUE, a->src_offset, a->nbytes, staging.data(), 0, nullptr, nullptr);
    if (status != CL_SUCCESS) return ClError("clEnqueueReadBuffer", status);
    status = clEnqueueWriteBuffer(dd->queue, dst->buffer, CL_TRUE, a->dst_offset, a->nbytes, staging.data(), 0, nullptr, nullptr);
    return status == CL_SUCCESS ? nullptr : ClError("clEnqueueWriteBuffer", status);
  }
  if (dst_cl) {
    status = clEnqueueWriteBuffer(q, dst->buffer, CL_TRUE, a->dst_offset, a->nbytes,
                                  static_cast<const uint8_t*>(a->src) + a->src_offset, 0, nullptr, nullptr);
    return status == CL_SUCCESS ? nullptr : ClError("clEnqueueWriteBuffer", status);
  }
  if (src_cl) {
    status = clEnqueueReadBuffer(q, src->buffer, CL_TRUE, a->src_offset, a->nbytes,
                                 static_cast<uint8_t*>(a->dst) + a->dst_offset, 0, nullptr, nullptr);
    return status == CL_SUCCESS ? nullptr : ClError("clEnqueueReadBuffer", status);
  }
  return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "neither side of the copy is an OpenCL device");
}

hetrt_error_t* StreamCreate(DLDevice device, hetrt_stream_t** out) {
  Device* d = nullptr;
  if (hetrt_error_t* e = CheckDevice(device, &d)) return e;
  cl_int status = CL_SUCCESS;
  cl_command_queue q = clCreateCommandQueue(d->context, d->id, CL_QUEUE_PROFILING_ENABLE, &status);
  if (status != CL_SUCCESS) return ClError("clCreateCommandQueue", status);
  *out = reinterpret_cast<hetrt_stream_t*>(q);
  return nullptr;
}

hetrt_error_t* StreamDestroy(DLDevice, hetrt_stream_t* stream) {
  if (stream) clReleaseCommandQueue(reinterpret_cast<cl_command_queue>(stream));
  return nullptr;
}

hetrt_error_t* Synchronize(DLDevice device, hetrt_stream_t* stream) {
  Device* d = nullptr;
  if (hetrt_error_t* e = CheckDevice(device, &d)) return e;
  cl_int status = clFinish(QueueOf(d, stream));
  return status == CL_SUCCESS ? nullptr : ClError("clFinish", status);
}

// An event is a marker on a queue; its profiling end time is the timestamp.
struct Event {
  cl_event marker = nullptr;
};

hetrt_error_t* EventCreate(DLDevice device, hetrt_event_t** out) {
  Device* d = nullptr;
  if (hetrt_error_t* e = CheckDevice(device, &d)) return e;
  *out = reinterpret_cast<hetrt_event_t*>(new Event());
  return nullptr;
}

hetrt_error_t* EventDestroy(DLDevice, hetrt_event_t* event) {
  auto* e = reinterpret_cast<Event*>(event);
  if (e && e->marker) clReleaseEvent(e->marker);
  delete e;
  return nullptr;
}

hetrt_error_t* EventRecord(DLDevice device, hetrt_event_t* event, hetrt_stream_t* stream) {
  Device* d = nullptr;
  if (hetrt_error_t* e = CheckDevice(device, &d)) return e;
  auto* e = reinterpret_cast<Event*>(event);
  if (e->marker) clReleaseEvent(e->marker);
  e->marker = nullptr;
  cl_int status = clEnqueueMarkerWithWaitList(QueueOf(d, stream), 0, nullptr, &e->marker);
  return status == CL_SUCCESS ? nullptr : ClError("clEnqueueMarkerWithWaitList", status);
}

hetrt_error_t* EventElapsed(DLDevice, hetrt_event_t* start, hetrt_event_t* end, double* out_ms) {
  auto* s = reinterpret_cast<Event*>(start);
  auto* e = reinterpret_cast<Event*>(end);
  if (!s || !e || !s->marker || !e->marker)
    return MakeError(HETRT_STATUS_FAILED_PRECONDITION, "event_elapsed_ms needs two recorded events");
  cl_event both[2] = {s->marker, e->marker};
  cl_int status = clWaitForEvents(2, both);
  if (status != CL_SUCCESS) return ClError("clWaitForEvents", status);
  cl_ulong t0 = 0, t1 = 0;
  status = clGetEventProfilingInfo(s->marker, CL_PROFILING_COMMAND_END, sizeof t0, &t0, nullptr);
  if (status == CL_SUCCESS) status = clGetEventProfilingInfo(e->marker, CL_PROFILING_COMMAND_END, sizeof t1, &t1, nullptr);
  if (status != CL_SUCCESS) return ClError("clGetEventProfilingInfo", status);
  *out_ms = static_cast<double>(t1 - t0) / 1e6;
  return nullptr;
}

void* WorkspaceAlloc(DLDevice device, uint64_t nbytes) {
  hetrt_allocate_args_t args{};
  args.struct_size = sizeof(args);
  args.device = device;
  args.nbytes = nbytes;
  args.alignment = 64;
  if (hetrt_error_t* e = Allocate(&args)) {
    ReportError("OpenCL workspace: " + e->message);
    delete e;
    return nullptr;
  }
  return args.data;
}

int32_t WorkspaceFree(DLDevice device, void* data) {
  if (hetrt_error_t* e = Free(device, data)) {
    ReportError("OpenCL workspace: " + e->message);
    delete e;
    return -1;
  }
  return 0;
}

hetrt_error_t* SetDevice(DLDevice device) {
  Device* d = nullptr;
  if (hetrt_error_t* e = CheckDevice(device, &d)) return e;
  SetCurrentDevice(device.device_id);
  return nullptr;
}

}  // namespace

Devices& Devices::Get() {
  static Devices devices;
  return devices;
}

Devices::Devices() {
  cl_uint num_platforms = 0;
  cl_int status = clGetPlatformIDs(0, nullptr, &num_platforms);
  if (status == -1001 /* CL_PLATFORM_NOT_FOUND_KHR */ || (status == CL_SUCCESS && num_platforms == 0)) {
    reason_ = "no OpenCL platform: the ICD loader found no vendor driver (.icd files in /etc/OpenCL/vendors or $OCL_ICD_VENDORS)";
    return;
  }
  if (status != CL_SUCCESS) {
    reason_ = std::string("clGetPlatformIDs failed: ") + ClErrorName(status);
    return;
  }
  std::vector<cl_platform_id> platforms(num_platforms);
  clGetPlatformIDs(num_platforms, platforms.data(), nullptr);
  std::string empty_platforms;
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
      reason_ += std::string(reason_.empty() ? "" : "; ") + "clCreateContext failed on " +
                 PlatformString(p, CL_PLATFORM_NAME) + ": " + ClErrorName(status);
      continue;
    }
    contexts_.push_back(ctx);
    for (cl_device_id id : ids) {
      cl_command_queue q = clCreateCommandQueue(ctx, id, CL_QUEUE_PROFILING_ENABLE, &status);
      if (status != CL_SUCCESS) continue;
      devices_.push_back({p, id, ctx, q, DeviceString(id, CL_DEVICE_NAME) + " (" + PlatformString(p, CL_PLATFORM_NAME) + ")",
                          DeviceString(id, CL_DRIVER_VERSION)});
    }
  }
  if (devices_.empty() && reason_.empty())
    reason_ = "OpenCL platform(s) " + empty_platforms + " report no devices";
}

int CurrentDevice() { return t_current_device; }
void SetCurrentDevice(int id) { t_current_device = id; }

const hetrt_device_api_t kDeviceApi = {
    sizeof(hetrt_device_api_t), DeviceCount, DeviceName,   Allocate,      Free,
    Copy,                       StreamCreate, StreamDestroy, Synchronize, EventCreate,
    EventDestroy,               EventRecord,  EventElapsed,  WorkspaceAlloc, WorkspaceFree,
    SetDevice,
};

}  // namespace hetrt::opencl
