#include "opencl_module.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "opencl_device.h"

struct hetrt_plugin_module;

namespace hetrt::opencl {
namespace {

// ---- The blob format: str fmt, map<str, FunctionInfo>, str source. ----

// One kernel of a module, the `resource` of its packed function.
struct Kernel {
  hetrt_plugin_module* module = nullptr;
  std::string name;
  std::vector<DLDataType> arg_types;
  sdk::LaunchTags launch;  // OpenCL kernels size local memory themselves: a dynamic size is ignored
  std::mutex mutex;        // clSetKernelArg + enqueue are one step
  std::map<int, cl_kernel> per_device;
};

}  // namespace
}  // namespace hetrt::opencl

// A loaded module: its kernels and, per device of its instance, a program.
struct hetrt_plugin_module {
  using Kernel = hetrt::opencl::Kernel;
  using Device = hetrt::opencl::Device;

  hetrt_instance* inst = nullptr;
  std::string source;
  hetrt::sdk::FunctionMap fmap;                  // as read, for saving
  std::vector<std::unique_ptr<Kernel>> kernels;  // fmap order
  hetrt::sdk::ModuleFunctions<Kernel> functions;

  // TVM's SaveToBinary layout: the bytes this module was loaded from.
  std::vector<uint8_t> Serialize() const {
    hetrt::sdk::BlobWriter w;
    w.Str("cl");
    hetrt::sdk::WriteFunctionMap(w, fmap);
    w.Str(source);
    return w.Take();
  }

  ~hetrt_plugin_module() {
    for (auto& k : kernels)
      for (auto& [dev, kernel] : k->per_device) clReleaseKernel(kernel);
    for (auto& [dev, program] : programs_) clReleaseProgram(program);
  }

  // The program for a device, built on first use and cached (also on disk when
  // HETRT_OPENCL_CACHE_DIR is set). Errors name the kernel that needed it.
  hetrt_error_t* Program(int device_id, const std::string& for_kernel, cl_program* out) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = programs_.find(device_id); it != programs_.end()) {
      *out = it->second;
      return nullptr;
    }
    Device* d = inst->devices.at(device_id);
    if (d == nullptr)
      return hetrt::opencl::MakeError(HETRT_STATUS_NOT_FOUND, "no OpenCL device " + std::to_string(device_id));
    const std::string cache_file = CacheFile(*d);
    cl_program program = cache_file.empty() ? nullptr : LoadCached(*d, cache_file);
    if (program == nullptr) {
      const char* text = source.c_str();
      const size_t length = source.size();
      cl_int status = CL_SUCCESS;
      program = clCreateProgramWithSource(d->context, 1, &text, &length, &status);
      if (status != CL_SUCCESS) return hetrt::opencl::ClError("clCreateProgramWithSource", status);
      status = clBuildProgram(program, 1, &d->id, "", nullptr, nullptr);
      if (status != CL_SUCCESS) {
        std::string log = BuildLog(program, d->id);
        clReleaseProgram(program);
        return hetrt::opencl::MakeError(HETRT_STATUS_INVALID_ARGUMENT,
                                        "building the OpenCL program for kernel '" + for_kernel + "' on " + d->name +
                                            " failed (" + hetrt::opencl::ClErrorName(status) + "):\n" + log);
      }
      if (!cache_file.empty()) SaveCached(program, cache_file);
    }
    programs_[device_id] = program;
    *out = program;
    return nullptr;
  }

 private:
  static std::string BuildLog(cl_program program, cl_device_id device) {
    size_t size = 0;
    clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size);
    std::string log(size, '\0');
    if (size) clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
    return log;
  }

  // Cache key: the source, the device and its driver version (FNV-1a, 64-bit).
  std::string CacheFile(const Device& d) const {
    const char* dir = std::getenv("HETRT_OPENCL_CACHE_DIR");
    if (dir == nullptr || *dir == '\0') return "";
    uint64_t h = 1469598103934665603ULL;
    for (const std::string* part : {&source, &d.name, &d.version})
      for (unsigned char c : *part + '\x1f') h = (h ^ c) * 1099511628211ULL;
    char name[32];
    std::snprintf(name, sizeof name, "%016llx.clbin", static_cast<unsigned long long>(h));
    return std::string(dir) + "/" + name;
  }

  static cl_program LoadCached(const Device& d, const std::string& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) return nullptr;
    std::vector<unsigned char> binary((std::istreambuf_iterator<char>(in)), {});
    if (binary.empty()) return nullptr;
    const unsigned char* ptr = binary.data();
    const size_t size = binary.size();
    cl_int status = CL_SUCCESS, binary_status = CL_SUCCESS;
    cl_program p = clCreateProgramWithBinary(d.context, 1, &d.id, &size, &ptr, &binary_status, &status);
    if (status != CL_SUCCESS || binary_status != CL_SUCCESS) return nullptr;
    if (clBuildProgram(p, 1, &d.id, "", nullptr, nullptr) != CL_SUCCESS) {
      clReleaseProgram(p);
      return nullptr;  // stale or foreign binary: rebuild from source
    }
    return p;
  }

  static void SaveCached(cl_program program, const std::string& file) {
    size_t size = 0;
    if (clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr) != CL_SUCCESS || size == 0)
      return;
    std::vector<unsigned char> binary(size);
    unsigned char* ptr = binary.data();
    if (clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof ptr, &ptr, nullptr) != CL_SUCCESS) return;
    // Written under a name of its own, then renamed: a concurrent reader sees
    // the old file or the whole new one. A failed write leaves no cache entry.
    const std::string tmp = file + "." + std::to_string(getpid()) + "." +
                            std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id())) + ".tmp";
    std::ofstream out(tmp, std::ios::binary);
    out.write(reinterpret_cast<const char*>(binary.data()), static_cast<std::streamsize>(size));
    out.close();
    if (out.good())
      std::rename(tmp.c_str(), file.c_str());
    else
      std::remove(tmp.c_str());
  }

  std::mutex mutex_;
  std::map<int, cl_program> programs_;
};

namespace hetrt::opencl {
namespace {

// ---- The packed function TVM host code calls: kernel args, then launch extents. ----

int32_t Launch(Kernel* k, hetrt_value_t* args, int32_t* codes, int32_t num_args) {
  hetrt_instance* inst = k->module->inst;
  auto ReportError = [inst](const std::string& message) { inst->ReportError(message); };
  const auto num_params = static_cast<int32_t>(k->arg_types.size());
  const auto num_tags = static_cast<int32_t>(k->launch.slots.size());
  const int32_t expected = num_params + k->launch.num_launch_args();
  if (num_args != expected) {
    ReportError("OpenCL kernel '" + k->name + "' takes " + std::to_string(expected) + " arguments (" +
                std::to_string(num_params) + " kernel arguments + " + std::to_string(num_tags) +
                " launch extents), got " + std::to_string(num_args));
    return -1;
  }
  const int device_id = Current::Device(inst->serial);
  Device* device = inst->devices.at(device_id);
  if (device == nullptr) {
    ReportError("OpenCL kernel '" + k->name + "': no OpenCL device " + std::to_string(device_id));
    return -1;
  }
  std::lock_guard<std::mutex> lock(k->mutex);
  cl_kernel kernel = nullptr;
  if (auto it = k->per_device.find(device_id); it != k->per_device.end()) {
    kernel = it->second;
  } else {
    cl_program program = nullptr;
    if (hetrt_error_t* e = k->module->Program(device_id, k->name, &program)) return sdk::FailCall(inst->host, e);
    cl_int status = CL_SUCCESS;
    kernel = clCreateKernel(program, k->name.c_str(), &status);
    if (status != CL_SUCCESS) {
      ReportError("OpenCL kernel '" + k->name + "' is not in its program: " + ClErrorName(status));
      return -1;
    }
    k->per_device[device_id] = kernel;
  }
  for (int32_t i = 0; i < num_params; ++i) {
    const DLDataType t = k->arg_types[static_cast<size_t>(i)];
    cl_int status = CL_SUCCESS;
    if (t.code == kDLOpaqueHandle) {
      auto* desc = static_cast<BufferDescriptor*>(args[i].v_handle);
      if (desc == nullptr || (codes[i] != HETRT_TYPE_HANDLE && codes[i] != HETRT_TYPE_NULL)) {
        ReportError("OpenCL kernel '" + k->name + "': argument " + std::to_string(i) + " is not an OpenCL buffer");
        return -1;
      }
      status = clSetKernelArg(kernel, static_cast<cl_uint>(i), sizeof(cl_mem), &desc->buffer);
    } else if (t.code == kDLFloat && t.bits == 32) {
      const float v = static_cast<float>(args[i].v_float64);
      status = clSetKernelArg(kernel, static_cast<cl_uint>(i), sizeof v, &v);
    } else if (t.code == kDLFloat && t.bits == 64) {
      status = clSetKernelArg(kernel, static_cast<cl_uint>(i), sizeof(double), &args[i].v_float64);
    } else if ((t.code == kDLInt || t.code == kDLUInt) && t.bits == 32) {
      const int32_t v = static_cast<int32_t>(args[i].v_int64);
      status = clSetKernelArg(kernel, static_cast<cl_uint>(i), sizeof v, &v);
    } else if ((t.code == kDLInt || t.code == kDLUInt) && t.bits == 64) {
      status = clSetKernelArg(kernel, static_cast<cl_uint>(i), sizeof(int64_t), &args[i].v_int64);
    } else {
      ReportError("OpenCL kernel '" + k->name + "': unsupported argument type at " + std::to_string(i));
      return -1;
    }
    if (status != CL_SUCCESS) {
      ReportError("OpenCL kernel '" + k->name + "': clSetKernelArg(" + std::to_string(i) +
                  ") failed: " + ClErrorName(status));
      return -1;
    }
  }
  size_t work[6] = {1, 1, 1, 1, 1, 1};
  for (int32_t t = 0; t < num_tags; ++t) {
    const int64_t v = args[num_params + t].v_int64;
    if (v > 0) work[k->launch.slots[static_cast<size_t>(t)]] = static_cast<size_t>(v);
  }
  size_t global[3], local[3];
  for (int d = 0; d < k->launch.work_dim(); ++d) {
    global[d] = work[d] * work[3 + d];
    local[d] = work[3 + d];
  }
  const hetrt_stream* stream = Current::Get(inst->serial, device_id);
  cl_int status =
      clEnqueueNDRangeKernel(stream ? stream->queue : device->queue, kernel, static_cast<cl_uint>(k->launch.work_dim()),
                             nullptr, global, local, 0, nullptr, nullptr);
  if (status != CL_SUCCESS) {
    ReportError("OpenCL kernel '" + k->name + "': clEnqueueNDRangeKernel failed: " + ClErrorName(status));
    return -1;
  }
  return 0;
}

// The packed function TVM host code calls; no exception leaves it.
constexpr hetrt_packed_cfunc_t LaunchKernel = sdk::GuardedLaunch<Kernel, Launch, kLabel>;

// ---- Module table ----

hetrt_error_t* Load(hetrt_module_load_args_t* args) {
  auto bad = [](const std::string& why) { return MakeError(HETRT_STATUS_DATA_LOSS, "OpenCL module blob: " + why); };
  if (hetrt_error_t* e = sdk::CheckLoadArgs<kLabel>(args, "opencl")) return e;
  sdk::BlobReader r({args->data, static_cast<size_t>(args->size)});
  std::string fmt;
  if (!r.Str(&fmt)) return bad("truncated format string");
  if (fmt != "cl")
    return MakeError(HETRT_STATUS_UNIMPLEMENTED, "OpenCL module format '" + fmt + "' (hetrt loads 'cl' source)");
  auto module = std::make_unique<hetrt_plugin_module>();
  module->inst = args->self;
  if (std::string why = sdk::ReadFunctionMap(r, &module->fmap); !why.empty()) return bad(why);
  for (const auto& [key, info] : module->fmap) {
    auto kernel = std::make_unique<Kernel>();
    kernel->module = module.get();
    kernel->name = key;
    kernel->arg_types = info.arg_types;
    for (const DLDataType& t : info.arg_types)
      if (t.lanes != 1)
        return MakeError(HETRT_STATUS_UNIMPLEMENTED,
                         "OpenCL kernel '" + key + "': vector-typed arguments are not supported");
    if (std::string why = sdk::ParseLaunchTags(info.launch_param_tags, &kernel->launch); !why.empty())
      return bad("function '" + key + "': " + why);
    module->functions.Add(key, kernel.get());
    module->kernels.push_back(std::move(kernel));
  }
  if (!r.Str(&module->source)) return bad("truncated source");
  args->consumed = r.offset();
  args->module = module.release();
  return nullptr;
}

// The conformance sample (ABI 2.1): the SDK's c = a + b in TVM's OpenCL blob
// layout.
hetrt_error_t* Sample(hetrt_module_sample_args_t* args) {
  if (args->device.device_type != kDLOpenCL)
    return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "the OpenCL sample runs on an OpenCL device");
  static const struct : sdk::AddSample {
    std::vector<uint8_t> blob = [] {
      sdk::BlobWriter w;
      w.Str("cl");
      sdk::WriteFunctionMap(w, Functions());
      w.Str(
          "__kernel void hetrt_sample_add(__global const float* a, __global const float* b, __global float* c, int n) "
          "{\n"
          "  const int i = get_global_id(0);\n"
          "  if (i < n) c[i] = a[i] + b[i];\n"
          "}\n");
      return w.Take();
    }();
  } sample;
  sample.Set(args, "opencl", sample.blob);
  return nullptr;
}

}  // namespace

const hetrt_module_api_t kModuleApi = sdk::ModuleTable<hetrt_plugin_module, LaunchKernel, kLabel, Load, Sample>();

}  // namespace hetrt::opencl
