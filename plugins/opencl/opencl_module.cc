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

class Reader {
 public:
  Reader(const uint8_t* data, uint64_t size) : data_(data), size_(size) {}
  uint64_t offset() const { return pos_; }
  bool U64(uint64_t* v) {
    if (size_ - pos_ < 8) return false;
    std::memcpy(v, data_ + pos_, 8);
    pos_ += 8;
    return true;
  }
  bool Bytes(uint64_t n, const uint8_t** out) {
    if (n > size_ - pos_) return false;
    *out = data_ + pos_;
    pos_ += n;
    return true;
  }
  bool Str(std::string* s) {
    uint64_t n = 0;
    const uint8_t* p = nullptr;
    if (!U64(&n) || !Bytes(n, &p)) return false;
    s->assign(reinterpret_cast<const char*>(p), n);
    return true;
  }
  // A count of elements of at least `min_bytes` each that can still fit.
  bool Count(uint64_t* n, uint64_t min_bytes) { return U64(n) && *n <= (size_ - pos_) / min_bytes; }

 private:
  const uint8_t* data_;
  uint64_t size_;
  uint64_t pos_ = 0;
};

struct FunctionInfo {
  std::vector<DLDataType> arg_types;
  std::vector<int> launch_slots;  // work-size slot of each launch tag: blockIdx.d -> d, threadIdx.d -> 3 + d
  int work_dim = 1;
  bool dynamic_shared_memory = false;
};

bool ParseTag(const std::string& tag, int* slot) {
  if (tag.size() == 10 && tag.compare(0, 9, "blockIdx.") == 0 && tag[9] >= 'x' && tag[9] <= 'z') {
    *slot = tag[9] - 'x';
    return true;
  }
  if (tag.size() == 11 && tag.compare(0, 10, "threadIdx.") == 0 && tag[10] >= 'x' && tag[10] <= 'z') {
    *slot = 3 + (tag[10] - 'x');
    return true;
  }
  return false;
}

// One kernel of a module, the `resource` of its packed function.
struct Kernel {
  hetrt_plugin_module* module = nullptr;
  std::string name;
  FunctionInfo info;
  std::mutex mutex;                  // clSetKernelArg + enqueue are one step
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
  std::vector<uint8_t> blob;  // the bytes this module was loaded from (save)
  std::map<std::string, std::unique_ptr<Kernel>> kernels;
  std::vector<const char*> names;

  ~hetrt_plugin_module() {
    for (auto& [name, k] : kernels)
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
    if (out.good()) std::rename(tmp.c_str(), file.c_str());
    else std::remove(tmp.c_str());
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
  const auto num_params = static_cast<int32_t>(k->info.arg_types.size());
  const auto num_tags = static_cast<int32_t>(k->info.launch_slots.size());
  const int32_t expected = num_params + num_tags + (k->info.dynamic_shared_memory ? 1 : 0);
  if (num_args != expected) {
    ReportError("OpenCL kernel '" + k->name + "' takes " + std::to_string(expected) + " arguments (" +
                std::to_string(num_params) + " kernel arguments + " + std::to_string(num_tags) +
                " launch extents), got " + std::to_string(num_args));
    return -1;
  }
  const int device_id = CurrentDevice(inst);
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
    if (hetrt_error_t* e = k->module->Program(device_id, k->name, &program)) {
      ReportError(e->message);
      delete e;
      return -1;
    }
    cl_int status = CL_SUCCESS;
    kernel = clCreateKernel(program, k->name.c_str(), &status);
    if (status != CL_SUCCESS) {
      ReportError("OpenCL kernel '" + k->name + "' is not in its program: " + ClErrorName(status));
      return -1;
    }
    k->per_device[device_id] = kernel;
  }
  for (int32_t i = 0; i < num_params; ++i) {
    const DLDataType t = k->info.arg_types[static_cast<size_t>(i)];
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
      ReportError("OpenCL kernel '" + k->name + "': clSetKernelArg(" + std::to_string(i) + ") failed: " + ClErrorName(status));
      return -1;
    }
  }
  size_t work[6] = {1, 1, 1, 1, 1, 1};
  for (int32_t t = 0; t < num_tags; ++t) {
    const int64_t v = args[num_params + t].v_int64;
    if (v > 0) work[k->info.launch_slots[static_cast<size_t>(t)]] = static_cast<size_t>(v);
  }
  size_t global[3], local[3];
  for (int d = 0; d < k->info.work_dim; ++d) {
    global[d] = work[d] * work[3 + d];
    local[d] = work[3 + d];
  }
  const hetrt_stream* stream = CurrentStream(inst, device_id);
  cl_int status = clEnqueueNDRangeKernel(stream ? stream->queue : device->queue, kernel,
                                         static_cast<cl_uint>(k->info.work_dim), nullptr, global, local, 0, nullptr,
                                         nullptr);
  if (status != CL_SUCCESS) {
    ReportError("OpenCL kernel '" + k->name + "': clEnqueueNDRangeKernel failed: " + ClErrorName(status));
    return -1;
  }
  return 0;
}

// The packed function TVM host code calls; no exception leaves it.
int32_t LaunchKernel(hetrt_value_t* args, int32_t* codes, int32_t num_args, hetrt_value_t*, int32_t*,
                     void* resource) {
  auto* k = static_cast<Kernel*>(resource);
  try {
    return Launch(k, args, codes, num_args);
  } catch (const std::exception& e) {
    k->module->inst->ReportError(e.what());  // no std::string: may be reporting bad_alloc
  } catch (...) {
    k->module->inst->ReportError("OpenCL kernel launch: unknown exception");
  }
  return -1;
}

// ---- Module table ----

hetrt_error_t* Load(hetrt_module_load_args_t* args) {
  auto bad = [](const std::string& why) { return MakeError(HETRT_STATUS_DATA_LOSS, "OpenCL module blob: " + why); };
  if (args->type_key && std::strcmp(args->type_key, "opencl") != 0)
    return MakeError(HETRT_STATUS_INVALID_ARGUMENT, std::string("the OpenCL plugin loads type_key 'opencl', not '") +
                                                        args->type_key + "'");
  if (args->data == nullptr && args->size != 0) return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "NULL module data");
  Reader r(args->data, args->size);
  std::string fmt;
  if (!r.Str(&fmt)) return bad("truncated format string");
  if (fmt != "cl")
    return MakeError(HETRT_STATUS_UNIMPLEMENTED, "OpenCL module format '" + fmt + "' (hetrt loads 'cl' source)");
  auto module = std::make_unique<hetrt_plugin_module>();
  module->inst = args->self;
  uint64_t count = 0;
  if (!r.Count(&count, 32)) return bad("function count does not fit the blob");
  for (uint64_t i = 0; i < count; ++i) {
    std::string key, name;
    uint64_t num_types = 0, num_tags = 0;
    if (!r.Str(&key) || !r.Str(&name) || key.empty()) return bad("function " + std::to_string(i) + ": bad name");
    auto kernel = std::make_unique<Kernel>();
    kernel->module = module.get();
    kernel->name = key;
    if (!r.Count(&num_types, 4)) return bad("function '" + key + "': argument type count does not fit");
    for (uint64_t t = 0; t < num_types; ++t) {
      const uint8_t* p = nullptr;
      r.Bytes(4, &p);
      DLDataType dt{p[0], p[1], static_cast<uint16_t>(p[2] | (p[3] << 8))};
      if (dt.lanes != 1)
        return MakeError(HETRT_STATUS_UNIMPLEMENTED, "OpenCL kernel '" + key + "': vector-typed arguments are not supported");
      kernel->info.arg_types.push_back(dt);
    }
    if (!r.Count(&num_tags, 8)) return bad("function '" + key + "': launch tag count does not fit");
    for (uint64_t t = 0; t < num_tags; ++t) {
      std::string tag;
      if (!r.Str(&tag)) return bad("function '" + key + "': truncated launch tag");
      if (tag == "tir.use_dyn_shared_memory" && t + 1 == num_tags) {
        kernel->info.dynamic_shared_memory = true;
        continue;
      }
      int slot = 0;
      if (!ParseTag(tag, &slot)) return bad("function '" + key + "': unknown launch tag '" + tag + "'");
      kernel->info.launch_slots.push_back(slot);
      kernel->info.work_dim = std::max(kernel->info.work_dim, 1 + slot % 3);
    }
    if (!module->kernels.emplace(key, std::move(kernel)).second) return bad("function '" + key + "' listed twice");
  }
  if (!r.Str(&module->source)) return bad("truncated source");
  for (auto& [name, k] : module->kernels) module->names.push_back(name.c_str());
  module->blob.assign(args->data, args->data + r.offset());
  args->consumed = r.offset();
  args->module = module.release();
  return nullptr;
}

hetrt_error_t* CheckModule(const hetrt_plugin_module* m) {
  return m ? nullptr : MakeError(HETRT_STATUS_INVALID_ARGUMENT, "NULL OpenCL module");
}

hetrt_error_t* GetFunction(hetrt_module_get_function_args_t* args) {
  if (hetrt_error_t* e = CheckModule(args->module)) return e;
  if (args->name == nullptr) return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "NULL function name");
  auto it = args->module->kernels.find(args->name);
  args->found = it != args->module->kernels.end();
  args->function = args->found ? hetrt_packed_func_t{&LaunchKernel, it->second.get()} : hetrt_packed_func_t{};
  return nullptr;
}

hetrt_error_t* ListFunctions(hetrt_module_list_functions_args_t* args) {
  if (hetrt_error_t* e = CheckModule(args->module)) return e;
  sdk::ListFunctionNames(args->module->names, args);
  return nullptr;
}

hetrt_error_t* Save(hetrt_module_save_args_t* args) {
  if (hetrt_error_t* e = CheckModule(args->module)) return e;
  args->data = args->module->blob.data();
  args->size = args->module->blob.size();
  return nullptr;
}

hetrt_error_t* Destroy(hetrt_module_destroy_args_t* args) {
  delete args->module;
  return nullptr;
}

// The conformance sample (ABI 2.1): c = a + b over 1000 floats, in TVM's
// OpenCL blob layout, launched as 4 work groups of 256 (the tail guarded by n).
hetrt_error_t* Sample(hetrt_module_sample_args_t* args) {
  if (args->device.device_type != kDLOpenCL)
    return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "the OpenCL sample runs on an OpenCL device");
  constexpr int kCount = 1000;
  static const struct SampleData {
    std::vector<uint8_t> blob;
    std::vector<float> a, b, sum;
    hetrt_module_sample_argument_t arguments[6];
    SampleData() : a(kCount), b(kCount), sum(kCount) {
      auto u64 = [&](uint64_t v) { blob.insert(blob.end(), reinterpret_cast<uint8_t*>(&v), reinterpret_cast<uint8_t*>(&v) + 8); };
      auto str = [&](const std::string& text) { u64(text.size()), blob.insert(blob.end(), text.begin(), text.end()); };
      auto type = [&](uint8_t code, uint8_t bits) { blob.insert(blob.end(), {code, bits, 1, 0}); };
      str("cl");
      u64(1);
      str("hetrt_sample_add"), str("hetrt_sample_add");
      u64(4), type(kDLOpaqueHandle, 64), type(kDLOpaqueHandle, 64), type(kDLOpaqueHandle, 64), type(kDLInt, 32);
      u64(2), str("blockIdx.x"), str("threadIdx.x");
      str("__kernel void hetrt_sample_add(__global const float* a, __global const float* b, __global float* c, int n) {\n"
          "  const int i = get_global_id(0);\n"
          "  if (i < n) c[i] = a[i] + b[i];\n"
          "}\n");
      for (int i = 0; i < kCount; ++i) a[i] = 0.5f * static_cast<float>(i) - 100.0f, b[i] = static_cast<float>(i % 7), sum[i] = a[i] + b[i];
      const uint64_t bytes = kCount * sizeof(float);
      arguments[0] = sdk::SampleBuffer(bytes, a.data(), a.data());
      arguments[1] = sdk::SampleBuffer(bytes, b.data(), b.data());
      arguments[2] = sdk::SampleBuffer(bytes, nullptr, sum.data());
      arguments[3] = sdk::SampleInt(kCount), arguments[4] = sdk::SampleInt(4), arguments[5] = sdk::SampleInt(256);
    }
  } sample;
  sdk::SetSample(args, "opencl", sample.blob, "hetrt_sample_add", sample.arguments);
  return nullptr;
}

}  // namespace

const hetrt_module_api_t kModuleApi = {
    .struct_size = sizeof(hetrt_module_api_t),
    .load = Entry<Load>::Call,
    .get_function = Entry<GetFunction>::Call,
    .list_functions = Entry<ListFunctions>::Call,
    .save = Entry<Save>::Call,
    .destroy = Entry<Destroy>::Call,
    .sample = Entry<Sample>::Call,
};

}  // namespace hetrt::opencl
