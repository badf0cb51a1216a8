// The module table: modules of type_key "sim". A blob is
//   "SIMMOD01"  u32 count  count x (u32 length, name bytes)
// naming the kernels (sim_kernels.cc) the module serves. A real device's blob
// carries code (PTX, SPIR-V, a binary) that load() hands to its driver.
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "sim_kernels.h"

namespace sim {
constexpr char kMagic[8] = {'S', 'I', 'M', 'M', 'O', 'D', '0', '1'};

// The blob of a module serving `names`.
std::vector<uint8_t> ModuleBlob(const std::vector<const char*>& names) {
  std::vector<uint8_t> blob(kMagic, kMagic + sizeof kMagic);
  auto u32 = [&](uint32_t v) {
    const size_t at = blob.size();
    blob.resize(at + sizeof v);
    std::memcpy(blob.data() + at, &v, sizeof v);
  };
  u32(static_cast<uint32_t>(names.size()));
  for (const char* name : names) {
    u32(static_cast<uint32_t>(std::strlen(name)));
    blob.insert(blob.end(), name, name + std::strlen(name));
  }
  return blob;
}
}  // namespace sim

// The SDK's ModuleFunctions gives get_function, list_functions and save
// (through Serialize) for free: the plugin writes load and sample.
struct hetrt_plugin_module {
  struct Function {
    sim::KernelFn fn;
    hetrt_instance* self;
  };
  std::deque<Function> all;  // stable addresses: `functions` points into it
  hetrt::sdk::ModuleFunctions<Function> functions;

  std::vector<uint8_t> Serialize() const { return sim::ModuleBlob(functions.names()); }
};

namespace sim {
namespace {

int32_t CallKernel(hetrt_value_t* args, int32_t* codes, int32_t num_args, hetrt_value_t*, int32_t*, void* resource) {
  auto* f = static_cast<hetrt_plugin_module::Function*>(resource);
  return f->fn(f->self, args, codes, num_args);
}

hetrt_error_t* Load(hetrt_module_load_args_t* args) {
  const std::string type_key = args->type_key ? args->type_key : "";
  if (type_key != "sim")
    return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "the sim plugin loads type_key 'sim', not '" + type_key + "'");
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
  if (count > left / sizeof(uint32_t))
    return bad(std::to_string(count) + " functions announced, the blob is too short");
  auto module = std::make_unique<hetrt_plugin_module>();
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t length = 0;
    if (!take(&length, sizeof length) || length > left)
      return bad("function " + std::to_string(i) + ": truncated name");
    std::string name(reinterpret_cast<const char*>(p), length);
    p += length, left -= length;
    KernelFn fn = FindKernel(name);
    if (fn == nullptr)
      return MakeError(HETRT_STATUS_NOT_FOUND,
                       "sim module names kernel '" + name + "', which this plugin does not have");
    module->all.push_back({fn, args->self});
    if (!module->functions.Add(name, &module->all.back())) return bad("kernel '" + name + "' listed twice");
  }
  args->consumed = args->size - left;
  args->module = module.release();
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
      blob = ModuleBlob({"sim_add_kernel"});
      for (int i = 0; i < 16; ++i)
        a[i] = static_cast<float>(i) - 4.5f, b[i] = 0.25f * static_cast<float>(i * i), sum[i] = a[i] + b[i];
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

const hetrt_module_api_t kModuleApi = hetrt::sdk::ModuleTable<hetrt_plugin_module, CallKernel, kLabel, Load, Sample>();

}  // namespace sim
