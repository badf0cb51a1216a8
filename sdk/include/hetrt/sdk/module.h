// The module side of a C++ plugin: the functions of a loaded module by name,
// the module-table entries every plugin writes the same way (get_function,
// list_functions, save, destroy), the table itself, and module.sample's helpers.
#pragma once

#include <cstring>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hetrt/plugin_abi.h"
#include "hetrt/sdk/entry.h"
#include "hetrt/sdk/error.h"
#include "hetrt/sdk/instance.h"
#include "hetrt/sdk/tvm_blob.h"

namespace hetrt::sdk {

// list_functions: writes up to args->capacity of `names` (module-owned) and
// sets the total count.
inline void ListFunctionNames(const std::vector<const char*>& names, hetrt_module_list_functions_args_t* args) {
  for (size_t i = 0; i < names.size() && i < args->capacity && args->names; ++i) args->names[i] = names[i];
  args->count = names.size();
}

// The functions of a module by name (list_functions gives them in the order
// added), and save()'s bytes, made once: a member `functions` of the plugin's
// module struct.
template <class Function>
class ModuleFunctions {
 public:
  // False when `name` is taken; the module keeps owning `function`.
  bool Add(const std::string& name, Function* function) {
    auto [it, inserted] = by_name_.emplace(name, function);
    if (inserted) names_.push_back(it->first.c_str());
    return inserted;
  }
  Function* Find(std::string_view name) const {
    auto it = by_name_.find(name);
    return it == by_name_.end() ? nullptr : it->second;
  }
  const std::vector<const char*>& names() const { return names_; }
  // serialize() on the first call, the same bytes after.
  template <class Serialize>
  std::span<const uint8_t> Saved(Serialize serialize) {
    std::lock_guard<std::mutex> lock(save_mutex_);
    if (saved_.empty()) saved_ = serialize();
    return saved_;
  }

 private:
  std::map<std::string, Function*, std::less<>> by_name_;
  std::vector<const char*> names_;
  std::mutex save_mutex_;
  std::vector<uint8_t> saved_;
};

// The module table's common entries, over the plugin's module struct `Module`
// (hetrt_plugin_module) with a member `functions` (ModuleFunctions<F>) and
// `std::vector<uint8_t> Serialize() const` (TVM's SaveToBinary bytes). Each
// function is handed out as {Launch, F*}.
template <class Module, hetrt_packed_cfunc_t Launch, const char* Label>
struct ModuleEntries {
  static hetrt_error_t* CheckModule(const Module* m) {
    return m ? nullptr : MakeErrorf(HETRT_STATUS_INVALID_ARGUMENT, "%s: NULL module", Label);
  }
  static hetrt_error_t* GetFunction(hetrt_module_get_function_args_t* args) {
    if (hetrt_error_t* e = CheckModule(args->module)) return e;
    if (args->name == nullptr) return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "NULL function name");
    Module* m = args->module;  // the plugin's complete type (args->module is not dependent)
    auto* f = m->functions.Find(args->name);
    args->found = f != nullptr;
    args->function = f ? hetrt_packed_func_t{Launch, f} : hetrt_packed_func_t{};
    return nullptr;
  }
  static hetrt_error_t* ListFunctions(hetrt_module_list_functions_args_t* args) {
    if (hetrt_error_t* e = CheckModule(args->module)) return e;
    const Module* m = args->module;
    ListFunctionNames(m->functions.names(), args);
    return nullptr;
  }
  static hetrt_error_t* Save(hetrt_module_save_args_t* args) {
    if (hetrt_error_t* e = CheckModule(args->module)) return e;
    Module* m = args->module;
    const std::span<const uint8_t> bytes = m->functions.Saved([m] { return m->Serialize(); });
    args->data = bytes.data();
    args->size = bytes.size();
    return nullptr;
  }
  static hetrt_error_t* Destroy(hetrt_module_destroy_args_t* args) {
    delete static_cast<Module*>(args->module);
    return nullptr;
  }
};

// The checks load() starts with: the type_key (NULL: the caller did not say)
// and the data pointer.
template <const char* Label>
hetrt_error_t* CheckLoadArgs(const hetrt_module_load_args_t* args, const char* type_key) {
  if (args->type_key && std::strcmp(args->type_key, type_key) != 0)
    return MakeErrorf(HETRT_STATUS_INVALID_ARGUMENT, "the %s loads type_key '%s', not '%s'", Label, type_key,
                      args->type_key);
  if (args->data == nullptr && args->size != 0) return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "NULL module data");
  return nullptr;
}

// The packed function of a module's kernels, as TVM host code calls it:
// Launch(kernel, args, codes, num_args) with no exception leaving it (one is
// reported through the host's set_last_error, reached as kernel->module->inst->host).
template <class Kernel, int32_t (*Launch)(Kernel*, hetrt_value_t*, int32_t*, int32_t), const char* Label>
int32_t GuardedLaunch(hetrt_value_t* args, int32_t* codes, int32_t num_args, hetrt_value_t*, int32_t*, void* resource) {
  auto* k = static_cast<Kernel*>(resource);
  try {
    return Launch(k, args, codes, num_args);
  } catch (const std::exception& e) {
    ReportError(k->module->inst->host, e.what());  // no std::string: may be reporting bad_alloc
  } catch (...) {
    ReportError(k->module->inst->host, "kernel launch: unknown exception");
  }
  return -1;
}

// The module table: load (and module.sample, ABI 2.1) from the plugin, the
// rest from ModuleEntries; every entry wrapped in Entry<..., Label>.
template <class Module, hetrt_packed_cfunc_t Launch, const char* Label, auto Load, auto Sample = nullptr>
constexpr hetrt_module_api_t ModuleTable() {
  using Common = ModuleEntries<Module, Launch, Label>;
  hetrt_module_api_t api{};
  api.struct_size = sizeof api;
  api.load = Entry<Load, Label>::Call;
  api.get_function = Entry<&Common::GetFunction, Label>::Call;
  api.list_functions = Entry<&Common::ListFunctions, Label>::Call;
  api.save = Entry<&Common::Save, Label>::Call;
  api.destroy = Entry<&Common::Destroy, Label>::Call;
  if constexpr (Sample != nullptr) api.sample = Entry<Sample, Label>::Call;
  return api;
}

// Arguments of a module.sample (ABI 2.1): a device buffer with the bytes it
// starts with (NULL: zeros) and the bytes it must hold after the call (NULL:
// not checked), and an integer.
inline hetrt_module_sample_argument_t SampleBuffer(uint64_t nbytes, const void* input, const void* expected) {
  hetrt_module_sample_argument_t arg{};
  arg.type_code = HETRT_TYPE_HANDLE;
  arg.nbytes = nbytes;
  arg.input = static_cast<const uint8_t*>(input);
  arg.expected = static_cast<const uint8_t*>(expected);
  return arg;
}

inline hetrt_module_sample_argument_t SampleInt(int64_t value) {
  hetrt_module_sample_argument_t arg{};
  arg.type_code = HETRT_TYPE_INT;
  arg.value.v_int64 = value;
  return arg;
}

// Fills module.sample's outputs (all of them must outlive the instance:
// static data serves).
inline void SetSample(hetrt_module_sample_args_t* args, const char* type_key, std::span<const uint8_t> blob,
                      const char* function_name, std::span<const hetrt_module_sample_argument_t> arguments) {
  args->type_key = type_key;
  args->data = blob.data();
  args->size = blob.size();
  args->function_name = function_name;
  args->arguments = arguments.data();
  args->num_arguments = arguments.size();
}

// The sample most device plugins give: c = a + b over 1000 floats, launched
// as 4 groups of 256 threads (the tail guarded by n). The plugin writes its
// blob around Functions() and the kernel's code; the data lives in a static.
struct AddSample {
  static constexpr int kCount = 1000;
  static constexpr const char* kName = "hetrt_sample_add";
  std::vector<float> a, b, sum;
  hetrt_module_sample_argument_t arguments[6];

  AddSample() : a(kCount), b(kCount), sum(kCount) {
    for (int i = 0; i < kCount; ++i) {
      a[i] = 0.5f * static_cast<float>(i) - 100.0f;
      b[i] = static_cast<float>(i % 7);
      sum[i] = a[i] + b[i];
    }
    const uint64_t bytes = kCount * sizeof(float);
    arguments[0] = SampleBuffer(bytes, a.data(), a.data());
    arguments[1] = SampleBuffer(bytes, b.data(), b.data());
    arguments[2] = SampleBuffer(bytes, nullptr, sum.data());
    arguments[3] = SampleInt(kCount), arguments[4] = SampleInt(4), arguments[5] = SampleInt(256);
  }
  // The function map of the blob: (a, b, c, int32 n), tags blockIdx.x, threadIdx.x.
  static FunctionMap Functions(const char* name = kName) {
    const DLDataType handle{kDLOpaqueHandle, 64, 1};
    FunctionInfo info{name, {handle, handle, handle, DLDataType{kDLInt, 32, 1}}, {"blockIdx.x", "threadIdx.x"}};
    return {{name, info}};
  }
  void Set(hetrt_module_sample_args_t* args, const char* type_key, std::span<const uint8_t> blob,
           const char* name = kName) const {
    SetSample(args, type_key, blob, name, arguments);
  }
};

}  // namespace hetrt::sdk
