#include "hetrt/module/kernel_library.h"

#include <dlfcn.h>

#include <algorithm>

#include "hetrt/sdk/byte_stream.h"
#include "hetrt/device/plugin.h"
#include "hetrt/formats/elf_symbols.h"
#include "hetrt/plugin_host/plugin_registry.h"
#include "hetrt/tvm_abi/global_functions.h"

namespace hetrt {
namespace {

constexpr std::string_view kKernelPrefix = "__tvm_ffi_";
// Library-level symbols of tvm-ffi (two underscores after the prefix:
// __tvm_ffi__library_bin, __tvm_ffi__metadata_<name>, ...) are not kernels.
constexpr std::string_view kLibraryPrefix = "__tvm_ffi__";
constexpr const char* kMetadataPrefix = "__tvm_ffi__metadata_";
constexpr const char* kDocPrefix = "__tvm_ffi__doc_";
// A model's blob, in each era's name (docs/tvm-ffi.md (a)).
constexpr const char* kModelBlobs[] = {"__tvm_dev_mblob", "__tvm_ffi_library_bin", "__tvm_ffi__library_bin"};

// TVMFFIEnvTensorAlloc's memory: the allocator of the prototype's device,
// through the plugins of the process-wide registry.
Result<Tensor> DeviceTensorMemory(const DLTensor& prototype) {
  std::vector<int64_t> shape(prototype.shape, prototype.shape + prototype.ndim);
  if (prototype.device.device_type == kDLCPU) return Tensor::EmptyHost(std::move(shape), prototype.dtype);
  HETRT_ASSIGN_OR_RETURN(Plugin * plugin, PluginRegistry::Global().ForDevice(prototype.device));
  return Tensor::Empty(std::move(shape), prototype.dtype, plugin->DeviceAllocator(prototype.device));
}

// Symbols only TVM v0.21's transitional ABI defines (docs/tvm-ffi.md (a)).
constexpr const char* kV021Symbols[] = {"__tvm_ffi_library_ctx", "__tvm_ffi_library_bin"};

struct Symbols {
  std::vector<std::string> kernels;
  std::string model_blob;  // the blob symbol, when the file is a model
  std::string v021;        // a symbol of TVM v0.21's ABI, when it has one
};

Result<Symbols> ReadSymbols(const std::string& path) {
  HETRT_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, ReadFileBytes(path));
  HETRT_ASSIGN_OR_RETURN(std::vector<ElfSymbol> symbols, ReadElfDynamicSymbols(bytes, path));
  Symbols found;
  for (const ElfSymbol& s : symbols) {
    if (!s.is_defined) continue;
    for (const char* blob : kModelBlobs)
      if (s.name == blob) found.model_blob = blob;
    for (const char* marker : kV021Symbols)
      if (s.name == marker) found.v021 = marker;
    const std::string_view name = s.name;
    if (s.is_function && name.starts_with(kKernelPrefix) && !name.starts_with(kLibraryPrefix) &&
        name.size() > kKernelPrefix.size())
      found.kernels.emplace_back(name.substr(kKernelPrefix.size()));
  }
  std::sort(found.kernels.begin(), found.kernels.end());
  found.kernels.erase(std::unique(found.kernels.begin(), found.kernels.end()), found.kernels.end());
  return found;
}

std::string Joined(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s.empty() ? "none" : s;
}

}  // namespace

bool IsKernelLibraryFile(const std::string& path) {
  Result<Symbols> symbols = ReadSymbols(path);
  return symbols.ok() && symbols->model_blob.empty() && !symbols->kernels.empty();
}

Result<std::shared_ptr<KernelLibrary>> KernelLibrary::Open(const std::string& path) {
  HETRT_ASSIGN_OR_RETURN(Symbols symbols, ReadSymbols(path));
  if (!symbols.v021.empty())
    return Unimplemented(path + " was built by TVM v0.21 (it defines " + symbols.v021 +
                         "), whose transitional tvm-ffi ABI hetrt does not run; rebuild it with TVM v0.22 or later, "
                         "or v0.20 or earlier");
  if (!symbols.model_blob.empty())
    return InvalidArgument(path + " is a TVM model library (it has " + symbols.model_blob +
                           "), not a kernel library: open it as a model (hetrt run, hetrt.load)");
  if (symbols.kernels.empty())
    return InvalidArgument(path + " exports no tvm-ffi kernels (no __tvm_ffi_<name> function)");
  // Its calls into tvm-ffi's C API (and a DT_NEEDED libtvm_ffi.so) resolve to
  // hetrt's shim, which must be in the global scope first.
  HETRT_RETURN_IF_ERROR(LoadTvmFfiShim(), "opening kernel library " + path);
  SetFfiTensorMemory(DeviceTensorMemory);
  const std::string resolved = path.find('/') == std::string::npos ? "./" + path : path;
  dlerror();
  void* handle = dlopen(resolved.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return InvalidArgument("cannot load kernel library " + path + ": " + (why ? why : "dlopen failed") +
                           " (hetrt provides tvm-ffi's C functions for kernels: the error slot, object "
                           "references, strings, streams and TVMFFIEnvTensorAlloc; docs/kernel-libraries.md)");
  }
  std::shared_ptr<KernelLibrary> library(new KernelLibrary(path, handle));
  library->names_ = std::move(symbols.kernels);
  // Before any of its code runs: TVM-generated kernels reach workspace,
  // parallel launch, errors and lookups through these pointers.
  InstallTvmFfiPointers(handle);
  InstallTvmFfiContext(handle, library.get());
  return library;
}

KernelLibrary::~KernelLibrary() {
  if (handle_ != nullptr) dlclose(handle_);
  for (auto& [name, function] : lookups_) ReleaseFfiObject(function);
}

Result<hetrt_ffi_object_t*> KernelLibrary::LookupFfiFunction(std::string_view name) {
  std::lock_guard<std::mutex> lock(lookups_mutex_);
  if (auto it = lookups_.find(name); it != lookups_.end()) return it->second;
  const PackedFunc* global = GlobalFunctionRegistry::Get().Find(name);
  if (global == nullptr)
    return NotFound("kernel library " + path_ + " looked up function '" + std::string(name) +
                    "', which is none of hetrt's global functions (a kernel library has no imported modules)");
  hetrt_ffi_object_t* function = MakeFfiFunctionFromPacked(*global, std::string(name));
  lookups_.emplace(std::string(name), function);
  return function;
}

Status KernelLibrary::RegisterGlobalFunctions(const std::string& prefix) {
  std::vector<std::pair<std::string, PackedFunc>> functions;
  for (const std::string& name : names_) {
    HETRT_ASSIGN_OR_RETURN(Kernel kernel, Find(name));
    functions.emplace_back(prefix + name, MakePackedFromFfiFunction(kernel.function_));
  }
  Status registered = GlobalFunctionRegistry::Get().RegisterAll(functions, shared_from_this());
  if (!registered.ok())
    return FailedPrecondition("cannot register the kernels of " + path_ + " with prefix '" + prefix +
                              "': " + registered.message() + " (the name is taken; choose another prefix)");
  return OkStatus();
}

Result<Kernel> KernelLibrary::Find(std::string_view name) const {
  if (!std::binary_search(names_.begin(), names_.end(), name))
    return NotFound("kernel library " + path_ + " has no kernel '" + std::string(name) + "' (it has: " +
                    Joined(names_) + ")");
  const std::string symbol = std::string(kKernelPrefix) + std::string(name);
  void* address = dlsym(handle_, symbol.c_str());
  if (address == nullptr) return NotFound("kernel library " + path_ + ": dlsym(" + symbol + ") failed");
  Kernel kernel;
  kernel.library_ = shared_from_this();
  kernel.name_ = std::string(name);
  kernel.what_ = "kernel '" + kernel.name_ + "' in " + path_;
  kernel.function_ = reinterpret_cast<hetrt_ffi_safe_call_t>(address);
  return kernel;
}

Result<std::string> KernelLibrary::CallStringFunction(const std::string& symbol, std::string_view name) const {
  if (!std::binary_search(names_.begin(), names_.end(), name))
    return NotFound("kernel library " + path_ + " has no kernel '" + std::string(name) + "'");
  void* address = dlsym(handle_, symbol.c_str());
  if (address == nullptr) return std::string();
  HETRT_ASSIGN_OR_RETURN(FfiValue value, CallFfiFunction(reinterpret_cast<hetrt_ffi_safe_call_t>(address), nullptr,
                                                         {}, symbol + " in " + path_));
  if (auto* text = std::get_if<std::string>(&value)) return std::move(*text);
  return InvalidArgument(symbol + " in " + path_ + " did not return a string");
}

Result<std::string> KernelLibrary::Metadata(std::string_view name) const {
  return CallStringFunction(kMetadataPrefix + std::string(name), name);
}

Result<std::string> KernelLibrary::Doc(std::string_view name) const {
  return CallStringFunction(kDocPrefix + std::string(name), name);
}

Result<FfiValue> Kernel::Call(std::span<const FfiValue> args, FfiRaised* raised) const {
  if (function_ == nullptr) return FailedPrecondition("calling an empty Kernel (use KernelLibrary::Find)");
  return CallFfiFunction(function_, nullptr, args, what_, raised);
}

}  // namespace hetrt
