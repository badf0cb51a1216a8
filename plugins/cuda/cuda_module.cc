#include "cuda_module.h"

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "cuda_device.h"
#include "cuda_format.h"

struct hetrt_plugin_module;

namespace hetrt::cuda {
namespace {

// One kernel of a module, the `resource` of its packed function. The function
// handle of each device is resolved on first launch there and then read
// without a lock.
struct Kernel {
  hetrt_plugin_module* module = nullptr;
  std::string name;
  ArgPlan args;
  LaunchTags tags;
  std::unique_ptr<std::atomic<CUfunction>[]> functions;   // per device
  std::unique_ptr<std::atomic<uint32_t>[]> shared_limit;  // dynamic shared memory the function was allowed, per device
};

}  // namespace
}  // namespace hetrt::cuda

// A loaded module: the blob as read, its kernels, and a CUmodule per device of
// its instance once a kernel ran there.
struct hetrt_plugin_module {
  using Device = hetrt::cuda::Device;
  using Kernel = hetrt::cuda::Kernel;

  hetrt_instance* inst = nullptr;
  hetrt::cuda::ModuleBlob blob;
  std::string image;                             // "fatbin: sm_80 cubin", for messages
  std::vector<std::unique_ptr<Kernel>> kernels;  // blob order
  hetrt::sdk::ModuleFunctions<Kernel> functions;

  // TVM's SaveToBinary layout, written from what was read (map order kept).
  std::vector<uint8_t> Serialize() const { return hetrt::cuda::SerializeModuleBlob(blob); }

  ~hetrt_plugin_module() {
    for (size_t id = 0; id < loaded_.size(); ++id) {
      if (loaded_[id] == nullptr) continue;
      if (hetrt_error_t* e = inst->Activate(inst->devices.at(static_cast<int>(id)))) {
        hetrt::sdk::DiscardError(e);
        continue;
      }
      inst->driver()->cuModuleUnload(loaded_[id]);
    }
  }

  // The kernel's function on `d` (d's context current), loading the module
  // there first if no kernel of it ran on d yet.
  hetrt_error_t* Resolve(Kernel* k, Device* d, CUfunction* out) {
    std::lock_guard<std::mutex> lock(mutex_);
    if ((*out = k->functions[d->id].load(std::memory_order_acquire)) != nullptr) return nullptr;
    const hetrt::cuda::Driver* cu = inst->driver();
    if (loaded_.empty()) loaded_.assign(static_cast<size_t>(inst->devices.count()), nullptr);
    CUmodule& module = loaded_[static_cast<size_t>(d->id)];
    if (module == nullptr)
      if (hetrt_error_t* e = Load(d, k->name, &module)) return e;
    CUfunction f = nullptr;
    if (CUresult r = cu->cuModuleGetFunction(&f, module, k->name.c_str()))
      return inst->Error(d, "CUDA kernel '" + k->name + "' is not in its module (" + image + ")", r);
    k->functions[d->id].store(f, std::memory_order_release);
    *out = f;
    return nullptr;
  }

 private:
  // cuModuleLoadDataEx with the JIT's error log, and messages that say why
  // an image does not fit the device or the driver.
  hetrt_error_t* Load(Device* d, const std::string& for_kernel, CUmodule* out) {
    const hetrt::cuda::Driver* cu = inst->driver();
    char log[4096] = {};
    CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void* values[] = {log, reinterpret_cast<void*>(static_cast<uintptr_t>(sizeof log - 1))};
    const CUresult r = cu->cuModuleLoadDataEx(out, blob.data.c_str(), 2, options, values);
    if (r == CUDA_SUCCESS) return nullptr;
    std::string why = "loading the module of kernel '" + for_kernel + "' (" + image + ")";
    if (r == CUDA_ERROR_NO_BINARY_FOR_GPU)
      why += ": it has no code for this GPU (compute " + d->facts.compute_version + ")";
    else if (r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION)
      why += ": its PTX is newer than the driver (" + d->facts.driver_version +
             ") compiles; a newer NVIDIA driver is needed";
    if (log[0] != '\0') why += "; JIT log: " + std::string(log);
    *out = nullptr;
    return inst->Error(d, why, r);
  }

  std::mutex mutex_;
  std::vector<CUmodule> loaded_;  // per device
};

namespace hetrt::cuda {
namespace {

// Arguments packed on the stack up to this many; more take the heap.
constexpr size_t kStackArgs = 32;

// The packed function TVM host code calls: kernel arguments, then one int64
// per launch tag, then the dynamic shared memory size if the last tag asks.
int32_t Launch(Kernel* k, hetrt_value_t* args, int32_t* codes, int32_t num_args) {
  hetrt_instance* inst = k->module->inst;
  const size_t num_params = k->args.conversions.size();
  const int32_t expected = static_cast<int32_t>(num_params) + k->tags.num_launch_args();
  if (num_args != expected) {
    inst->ReportError("CUDA kernel '" + k->name + "' takes " + std::to_string(expected) + " arguments (" +
                      std::to_string(num_params) + " kernel arguments + " + std::to_string(k->tags.num_launch_args()) +
                      " launch values), got " + std::to_string(num_args));
    return -1;
  }
  const int device_id = Current::Device(inst->serial);
  Device* d = nullptr;
  auto fail = [inst](hetrt_error_t* e) { return sdk::FailCall(inst->host, e); };
  if (hetrt_error_t* e = inst->devices.Find(DLDevice{kDLCUDA, device_id}, &d)) {
    e->message = "CUDA kernel '" + k->name + "': " + e->message;
    return fail(e);
  }
  LaunchGeometry g;
  if (std::string why = ComputeGeometry(k->tags, args + num_params, &g); !why.empty()) {
    inst->ReportError("CUDA kernel '" + k->name + "': " + why);
    return -1;
  }
  if (hetrt_error_t* e = inst->Activate(d)) return fail(e);
  CUfunction f = k->functions[device_id].load(std::memory_order_acquire);
  if (f == nullptr)
    if (hetrt_error_t* e = k->module->Resolve(k, d, &f)) return fail(e);
  const Driver* cu = inst->driver();
  if (g.dynamic_shared_bytes > kDefaultDynamicSharedLimit &&
      g.dynamic_shared_bytes > k->shared_limit[device_id].load(std::memory_order_relaxed)) {
    if (g.dynamic_shared_bytes > static_cast<uint32_t>(d->shared_per_block_optin)) {
      inst->ReportError("CUDA kernel '" + k->name + "' asks for " + std::to_string(g.dynamic_shared_bytes) +
                        " bytes of dynamic shared memory; cuda:" + std::to_string(d->id) + " allows " +
                        std::to_string(d->shared_per_block_optin) + " per block");
      return -1;
    }
    if (CUresult r = cu->cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                            static_cast<int>(g.dynamic_shared_bytes)))
      return fail(inst->Error(d,
                              "raising the dynamic shared memory of kernel '" + k->name + "' to " +
                                  std::to_string(g.dynamic_shared_bytes) + " bytes",
                              r));
    k->shared_limit[device_id].store(g.dynamic_shared_bytes, std::memory_order_relaxed);
  }
  uint64_t stack_slots[kStackArgs];
  void* stack_params[kStackArgs];
  std::vector<uint64_t> heap_slots;
  std::vector<void*> heap_params;
  uint64_t* slots = stack_slots;
  void** params = stack_params;
  if (num_params > kStackArgs) {
    heap_slots.resize(num_params);
    heap_params.resize(num_params);
    slots = heap_slots.data();
    params = heap_params.data();
  }
  if (int bad = PackArguments(k->args, args, codes, slots, params); bad >= 0) {
    inst->ReportError(
        "CUDA kernel '" + k->name + "': argument " + std::to_string(bad) + " has type code " +
        std::to_string(codes[bad]) + ", which does not fit its parameter (" +
        (k->args.conversions[static_cast<size_t>(bad)] == ArgConversion::kHandle ? "a device pointer" : "a scalar") +
        ")");
    return -1;
  }
  const CUresult r = cu->cuLaunchKernel(f, g.grid[0], g.grid[1], g.grid[2], g.block[0], g.block[1], g.block[2],
                                        g.dynamic_shared_bytes, LaunchStream(inst, d), params, nullptr);
  if (r != CUDA_SUCCESS)
    return fail(inst->Error(d, "launching kernel '" + k->name + "' with " + DescribeGeometry(g), r));
  return 0;
}

// The packed function TVM host code calls; no exception leaves it.
constexpr hetrt_packed_cfunc_t LaunchKernel = sdk::GuardedLaunch<Kernel, Launch, kLabel>;

// ---- Module table ----

hetrt_error_t* Load(hetrt_module_load_args_t* args) {
  auto bad = [](const std::string& why) { return MakeError(HETRT_STATUS_DATA_LOSS, "CUDA module blob: " + why); };
  if (hetrt_error_t* e = sdk::CheckLoadArgs<kLabel>(args, "cuda")) return e;
  auto module = std::make_unique<hetrt_plugin_module>();
  module->inst = args->self;
  uint64_t consumed = 0;
  if (std::string why = ParseModuleBlob({args->data, static_cast<size_t>(args->size)}, &module->blob, &consumed);
      !why.empty())
    return bad(why);
  const ModuleBlob& blob = module->blob;
  const std::span<const uint8_t> image(reinterpret_cast<const uint8_t*>(blob.data.data()), blob.data.size());
  const ImageKind kind = DetectImage(image);
  module->image = DescribeImage(image);
  if (blob.fmt != "ptx" && blob.fmt != "cubin" && blob.fmt != "fatbin")
    return MakeError(HETRT_STATUS_UNIMPLEMENTED,
                     "CUDA module format '" + blob.fmt + "' (hetrt loads ptx, cubin and fatbin)");
  if (kind == ImageKind::kUnknown)
    return bad("the data is neither PTX text, a cubin (ELF) nor a fatbin (magic 0xBA55ED50): " + module->image);
  if ((blob.fmt == "ptx") != (kind == ImageKind::kPtx))
    return bad("format '" + blob.fmt + "' but the data is " + module->image);
  const int num_devices = args->self->devices.count();
  for (const auto& [key, info] : blob.functions) {
    auto k = std::make_unique<Kernel>();
    k->module = module.get();
    k->name = key;
    if (std::string why = PlanArguments(info.arg_types, &k->args); !why.empty())
      return MakeError(HETRT_STATUS_UNIMPLEMENTED, "CUDA kernel '" + key + "': " + why);
    if (std::string why = ParseLaunchTags(info.launch_param_tags, &k->tags); !why.empty())
      return bad("kernel '" + key + "': " + why);
    k->functions = std::make_unique<std::atomic<CUfunction>[]>(static_cast<size_t>(num_devices));
    k->shared_limit = std::make_unique<std::atomic<uint32_t>[]>(static_cast<size_t>(num_devices));
    for (int i = 0; i < num_devices; ++i) k->functions[i] = nullptr, k->shared_limit[i] = kDefaultDynamicSharedLimit;
    module->functions.Add(key, k.get());
    module->kernels.push_back(std::move(k));
  }
  args->consumed = consumed;
  args->module = module.release();
  return nullptr;
}

// The conformance sample (ABI 2.1): the SDK's c = a + b as PTX (checked with
// ptxas; any GPU's driver JIT-compiles it). Named as the test kernel the fake
// driver in tests/cuda runs a host build of, so the kit runs it there too.
hetrt_error_t* Sample(hetrt_module_sample_args_t* args) {
  if (args->device.device_type != kDLCUDA)
    return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "the CUDA sample runs on a CUDA device");
  static constexpr char kCudaName[] = "hetrt_cu_add_kernel";  // not AddSample::kName
  static const struct : sdk::AddSample {
    std::vector<uint8_t> blob = [] {
      ModuleBlob blob{"ptx", Functions(kCudaName), R"(.version 6.0
.target sm_50
.address_size 64

.visible .entry hetrt_cu_add_kernel(.param .u64 a, .param .u64 b, .param .u64 y, .param .u32 n)
{
  .reg .pred %p<2>;
  .reg .f32 %f<4>;
  .reg .b32 %r<6>;
  .reg .b64 %rd<11>;
  ld.param.u64 %rd1, [a];
  ld.param.u64 %rd2, [b];
  ld.param.u64 %rd3, [y];
  ld.param.u32 %r2, [n];
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ntid.x;
  mov.u32 %r5, %tid.x;
  mad.lo.s32 %r1, %r3, %r4, %r5;
  setp.ge.s32 %p1, %r1, %r2;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd4, %rd1;
  cvta.to.global.u64 %rd5, %rd2;
  cvta.to.global.u64 %rd6, %rd3;
  mul.wide.s32 %rd7, %r1, 4;
  add.s64 %rd8, %rd4, %rd7;
  add.s64 %rd9, %rd5, %rd7;
  add.s64 %rd10, %rd6, %rd7;
  ld.global.f32 %f1, [%rd8];
  ld.global.f32 %f2, [%rd9];
  add.f32 %f3, %f1, %f2;
  st.global.f32 [%rd10], %f3;
DONE:
  ret;
}
)"};
      return SerializeModuleBlob(blob);
    }();
  } sample;
  sample.Set(args, "cuda", sample.blob, kCudaName);
  return nullptr;
}

}  // namespace

const hetrt_module_api_t kModuleApi = sdk::ModuleTable<hetrt_plugin_module, LaunchKernel, kLabel, Load, Sample>();

}  // namespace hetrt::cuda
