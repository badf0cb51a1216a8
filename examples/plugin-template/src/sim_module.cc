// The module table: modules of type_key "sim". A blob is
//   "SIMMOD01"  u32 count  count x (u32 length, name bytes)
// naming the kernels (sim_kernels.cc) the module serves. A real device's blob
// carries code (PTX, SPIR-V, a binary) that load() hands to its driver.
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "sim_kernels.h"

struct hetrt_plugin_module {
  struct Function {
    sim::KernelFn fn;
    hetrt_instance* self;
  };
  std::vector<uint8_t> blob;  // as loaded: save() returns it
  std::map<std::string, Function, std::less<>> functions;
  std::vector<const char*> names;  // into `functions`' keys
};

namespace sim {
namespace {

constexpr char kMagic[8] = {'S', 'I', 'M', 'M', 'O', 'D', '0', '1'};

int32_t CallKernel(hetrt_value_t* args, int32_t* codes, int32_t num_args, hetrt_value_t*, int32_t*, void* resource) {
  auto* f = static_cast<hetrt_plugin_module::Function*>(resource);
  return f->fn(f->self, args, codes, num_args);
}

hetrt_error_t* Load(hetrt_module_load_args_t* args) {
  const std::string type_key = args->type_key ? args->type_key : "";
  if (type_key != "sim") return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "the sim plugin loads type_key 'sim', not '" + type_key + "'");
  const uint8_t* p = args->data;
  uint64_t left = args->data ? args->size : 0;
  auto bad = [&](const std::string& why) {
    return MakeError(HETRT_STATUS_DATA_LOSS, "sim module blob (" + std::to_string(args->size) + " bytes): " + why);
  };
  auto take = [&](void* out, uint64_t n) {
    if (left < n) return false;
    std::memcpy(out, p, n);
    p += n, left -= n;
    return true;
  };
  char magic[8];
  if (!take(magic, sizeof magic) || std::memcmp(magic, kMagic, sizeof magic) != 0) return bad("no SIMMOD01 header");
  uint32_t count = 0;
  if (!take(&count, sizeof count)) return bad("truncated function count");
  if (count > left / sizeof(uint32_t)) return bad(std::to_string(count) + " functions announced, the blob is too short");
  auto module = std::make_unique<hetrt_plugin_module>();
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t length = 0;
    if (!take(&length, sizeof length) || length > left) return bad("function " + std::to_string(i) + ": truncated name");
    std::string name(reinterpret_cast<const char*>(p), length);
    p += length, left -= length;
    KernelFn fn = FindKernel(name);
    if (fn == nullptr) return MakeError(HETRT_STATUS_NOT_FOUND, "sim module names kernel '" + name + "', which this plugin does not have");
    module->functions[name] = {fn, args->self};
  }
  for (const auto& [name, fn] : module->functions) module->names.push_back(name.c_str());
  args->consumed = args->size - left;
  module->blob.assign(args->data, args->data + args->consumed);
  args->module = module.release();
  return nullptr;
}

hetrt_error_t* GetFunction(hetrt_module_get_function_args_t* args) {
  if (args->module == nullptr || args->name == nullptr) return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "NULL module or name");
  auto it = args->module->functions.find(std::string_view(args->name));
  args->found = it != args->module->functions.end();
  args->function = args->found ? hetrt_packed_func_t{CallKernel, &it->second} : hetrt_packed_func_t{};
  return nullptr;
}

hetrt_error_t* ListFunctions(hetrt_module_list_functions_args_t* args) {
  if (args->module == nullptr) return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "NULL module");
  hetrt::sdk::ListFunctionNames(args->module->names, args);
  return nullptr;
}

hetrt_error_t* Save(hetrt_module_save_args_t* args) {
  if (args->module == nullptr) return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "NULL module");
  args->data = args->module->blob.data();
  args->size = args->module->blob.size();
  return nullptr;
}

hetrt_error_t* Destroy(hetrt_module_destroy_args_t* args) {
  delete args->module;
  return nullptr;
}

// The conformance sample (ABI 2.1): a module with sim_add_kernel, called on
// three 16-float buffers and the count; the third must hold the sums.
hetrt_error_t* Sample(hetrt_module_sample_args_t* args) {
  if (hetrt_error_t* e = CheckDevice(args->device)) return e;
  static const struct SampleData {
    std::vector<uint8_t> blob;
    float a[16], b[16], sum[16];
    hetrt_module_sample_argument_t arguments[4];
    SampleData() {
      const std::string name = "sim_add_kernel";
      const uint32_t count = 1, length = static_cast<uint32_t>(name.size());
      blob.assign(kMagic, kMagic + sizeof kMagic);
      blob.insert(blob.end(), reinterpret_cast<const uint8_t*>(&count), reinterpret_cast<const uint8_t*>(&count) + 4);
      blob.insert(blob.end(), reinterpret_cast<const uint8_t*>(&length), reinterpret_cast<const uint8_t*>(&length) + 4);
      blob.insert(blob.end(), name.begin(), name.end());
      for (int i = 0; i < 16; ++i) a[i] = static_cast<float>(i) - 4.5f, b[i] = 0.25f * static_cast<float>(i * i), sum[i] = a[i] + b[i];
      arguments[0] = hetrt::sdk::SampleBuffer(sizeof a, a, a);
      arguments[1] = hetrt::sdk::SampleBuffer(sizeof b, b, b);
      arguments[2] = hetrt::sdk::SampleBuffer(sizeof sum, nullptr, sum);
      arguments[3] = hetrt::sdk::SampleInt(16);
    }
  } sample;
  hetrt::sdk::SetSample(args, "sim", sample.blob, "sim_add_kernel", sample.arguments);
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

}  // namespace sim
