#include "vulkan_module.h"

#include <spirv-tools/libspirv.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "vulkan_device.h"
#include "vulkan_sample_spirv.h"

struct hetrt_plugin_module;

namespace hetrt::vulkan {
namespace {

constexpr uint32_t kSpirvMagic = 0x07230203;
constexpr uint32_t kUboFlag = 1u << 0;  // scalars in a uniform buffer, not push constants

// ---- The blob: str fmt, map<str, FunctionInfo> fmap, map<str, Shader> smap ----

// What the loader learns from a shader's SPIR-V without a driver.
struct Shader {
  std::string key;
  uint32_t flag = 0;
  std::vector<uint32_t> words;
  uint32_t version = 0;                   // SPIR-V version word (0x00010300 = 1.3)
  std::vector<std::string> entry_points;  // GLCompute ones
  std::vector<uint32_t> bindings;         // of set-0 resources
  bool other_sets = false;                // a resource outside set 0
};

spv_target_env ValidationEnv(uint32_t version) {
  if (version <= 0x10300) return SPV_ENV_VULKAN_1_1;
  if (version == 0x10400) return SPV_ENV_VULKAN_1_1_SPIRV_1_4;
  if (version == 0x10500) return SPV_ENV_VULKAN_1_2;
  return SPV_ENV_VULKAN_1_3;
}

// Structural checks, spirv-tools validation, then entry points and bindings.
std::string InspectShader(Shader* s, bool validate) {
  const std::vector<uint32_t>& w = s->words;
  if (w.size() < 5) return "SPIR-V of " + std::to_string(w.size()) + " words is shorter than its 5-word header";
  if (w[0] != kSpirvMagic) {
    char magic[16];
    std::snprintf(magic, sizeof magic, "0x%08x", w[0]);
    return std::string("not SPIR-V (magic ") + magic + ", expected 0x07230203)";
  }
  s->version = w[1] & 0x00ffff00;
  if (validate) {
    spv_context context = spvContextCreate(ValidationEnv(s->version));
    spv_validator_options options = spvValidatorOptionsCreate();
    spvValidatorOptionsSetRelaxBlockLayout(options, true);
    spv_const_binary_t binary{w.data(), w.size()};
    spv_diagnostic diagnostic = nullptr;
    const spv_result_t result = spvValidateWithOptions(context, options, &binary, &diagnostic);
    std::string message;
    if (result != SPV_SUCCESS)
      message =
          "invalid SPIR-V: " + std::string(diagnostic && diagnostic->error ? diagnostic->error : "spvValidate failed");
    spvDiagnosticDestroy(diagnostic);
    spvValidatorOptionsDestroy(options);
    spvContextDestroy(context);
    if (!message.empty()) return message;
  }
  std::map<uint32_t, uint32_t> set_of, binding_of;  // variable id -> decoration
  for (size_t i = 5; i < w.size();) {
    const uint32_t count = w[i] >> 16, opcode = w[i] & 0xffff;
    if (count == 0 || count > w.size() - i) return "malformed SPIR-V instruction at word " + std::to_string(i);
    if (opcode == 15 /* OpEntryPoint */ && count >= 4 && w[i + 1] == 5 /* GLCompute */) {
      const char* name = reinterpret_cast<const char*>(&w[i + 3]);
      s->entry_points.emplace_back(name, strnlen(name, (count - 3) * 4));
    }
    if (opcode == 71 /* OpDecorate */ && count >= 4 && w[i + 2] == 34 /* DescriptorSet */) set_of[w[i + 1]] = w[i + 3];
    if (opcode == 71 && count >= 4 && w[i + 2] == 33 /* Binding */) binding_of[w[i + 1]] = w[i + 3];
    i += count;
  }
  for (const auto& [id, binding] : binding_of) {
    auto set = set_of.find(id);
    if (set != set_of.end() && set->second != 0)
      s->other_sets = true;
    else
      s->bindings.push_back(binding);
  }
  return "";
}

struct Pipeline {
  VkShaderModule shader = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  bool push_descriptors = false;
};

// One function of a module, the `resource` of its packed function.
struct Function {
  hetrt_plugin_module* module = nullptr;
  std::string name;  // the fmap key: also the shader's key and entry point
  std::vector<DLDataType> arg_types;
  uint32_t num_buffers = 0, num_scalars = 0;
  sdk::LaunchTags launch;  // dynamic shared memory is sized by the shader: its value is ignored
  const Shader* shader = nullptr;
  bool ubo = false;
  // Per device of the instance, built on first launch there.
  std::mutex build_mutex;
  std::unique_ptr<std::atomic<Pipeline*>[]> pipelines;
  std::vector<std::unique_ptr<Pipeline>> built;
  std::vector<Device*> built_on;
};

}  // namespace
}  // namespace hetrt::vulkan

struct hetrt_plugin_module {
  hetrt_instance* inst = nullptr;
  std::string fmt;
  hetrt::sdk::FunctionMap fmap;                                         // as read, for saving
  std::vector<std::unique_ptr<hetrt::vulkan::Function>> all_functions;  // fmap order
  std::vector<std::unique_ptr<hetrt::vulkan::Shader>> shaders;          // smap order
  hetrt::sdk::ModuleFunctions<hetrt::vulkan::Function> functions;

  // TVM's SaveToBinary layout, maps in the order they were read.
  std::vector<uint8_t> Serialize() const {
    hetrt::sdk::BlobWriter w;
    w.Str(fmt);
    hetrt::sdk::WriteFunctionMap(w, fmap);
    w.Pod<uint64_t>(shaders.size());
    for (const auto& s : shaders) {
      w.Str(s->key);
      w.Pod(s->flag);
      w.Pod<uint64_t>(s->words.size());
      w.Words(s->words);
    }
    return w.Take();
  }

  ~hetrt_plugin_module() {
    for (auto& f : all_functions)
      for (size_t i = 0; i < f->built.size(); ++i) {
        VkDevice dev = f->built_on[i]->handle;
        const hetrt::vulkan::Pipeline& p = *f->built[i];
        vkDestroyPipeline(dev, p.pipeline, nullptr);
        vkDestroyPipelineLayout(dev, p.layout, nullptr);
        vkDestroyDescriptorSetLayout(dev, p.set_layout, nullptr);
        vkDestroyShaderModule(dev, p.shader, nullptr);
      }
  }
};

namespace hetrt::vulkan {
namespace {

// ---- Pipelines ----

hetrt_error_t* BuildPipeline(Function* f, Device* d, Pipeline** out) {
  hetrt_instance* inst = f->module->inst;
  auto bad = [&](const std::string& why) {
    return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "Vulkan kernel '" + f->name + "' on " + d->name + ": " + why);
  };
  if (f->shader->version > d->max_spirv) {
    char v[32];
    std::snprintf(v, sizeof v, "%u.%u", f->shader->version >> 16, (f->shader->version >> 8) & 0xff);
    return bad(std::string("SPIR-V ") + v + " is newer than Vulkan " + d->facts.compute_version + " consumes");
  }
  const uint32_t scalar_bytes = 8 * f->num_scalars;
  if (!f->ubo && scalar_bytes > d->props.limits.maxPushConstantsSize)
    return bad(std::to_string(f->num_scalars) + " scalar arguments need " + std::to_string(scalar_bytes) +
               " bytes of push constants; the device allows " + std::to_string(d->props.limits.maxPushConstantsSize));
  if (f->ubo && scalar_bytes > d->props.limits.maxUniformBufferRange)
    return bad(std::to_string(scalar_bytes) + " bytes of scalars exceed maxUniformBufferRange");
  const uint32_t bindings = f->num_buffers + (f->ubo ? 1 : 0);
  if (f->num_buffers > d->props.limits.maxPerStageDescriptorStorageBuffers)
    return bad(std::to_string(f->num_buffers) + " buffers exceed maxPerStageDescriptorStorageBuffers");
  auto p = std::make_unique<Pipeline>();
  p->push_descriptors = inst->push_descriptors.load() && d->max_push_descriptors >= bindings;
  VkDevice dev = d->handle;
  auto fail = [&](const char* call, VkResult r) {
    if (p->layout) vkDestroyPipelineLayout(dev, p->layout, nullptr);
    if (p->set_layout) vkDestroyDescriptorSetLayout(dev, p->set_layout, nullptr);
    if (p->shader) vkDestroyShaderModule(dev, p->shader, nullptr);
    return MakeError(HETRT_STATUS_INTERNAL, "Vulkan kernel '" + f->name + "' on " + d->name + ": " + call +
                                                " failed: " + VkResultName(r) + " (" + std::to_string(r) + ")");
  };
  auto shader = VkStruct<VkShaderModuleCreateInfo>(VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO);
  shader.codeSize = f->shader->words.size() * 4;
  shader.pCode = f->shader->words.data();
  VkResult r = vkCreateShaderModule(dev, &shader, nullptr, &p->shader);
  if (r != VK_SUCCESS) return fail("vkCreateShaderModule", r);
  std::vector<VkDescriptorSetLayoutBinding> layout_bindings(bindings);
  for (uint32_t i = 0; i < bindings; ++i)
    layout_bindings[i] = {i, i < f->num_buffers ? VK_DESCRIPTOR_TYPE_STORAGE_BUFFER : VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER,
                          1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  auto set = VkStruct<VkDescriptorSetLayoutCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO);
  set.flags = p->push_descriptors ? VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR : 0;
  set.bindingCount = bindings;
  set.pBindings = layout_bindings.data();
  if ((r = vkCreateDescriptorSetLayout(dev, &set, nullptr, &p->set_layout)) != VK_SUCCESS)
    return fail("vkCreateDescriptorSetLayout", r);
  const VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, scalar_bytes};
  auto layout = VkStruct<VkPipelineLayoutCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO);
  layout.setLayoutCount = 1;
  layout.pSetLayouts = &p->set_layout;
  layout.pushConstantRangeCount = !f->ubo && scalar_bytes > 0 ? 1 : 0;
  layout.pPushConstantRanges = &range;
  if ((r = vkCreatePipelineLayout(dev, &layout, nullptr, &p->layout)) != VK_SUCCESS)
    return fail("vkCreatePipelineLayout", r);
  auto info = VkStruct<VkComputePipelineCreateInfo>(VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO);
  info.stage = VkStruct<VkPipelineShaderStageCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO);
  info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  info.stage.module = p->shader;
  info.stage.pName = f->name.c_str();
  info.layout = p->layout;
  if ((r = vkCreateComputePipelines(dev, d->pipeline_cache, 1, &info, nullptr, &p->pipeline)) != VK_SUCCESS)
    return fail("vkCreateComputePipelines", r);
  SavePipelineCache(d);
  *out = p.get();
  f->built.push_back(std::move(p));
  f->built_on.push_back(d);
  return nullptr;
}

// ---- The packed function: buffers, scalars, then launch values ----

// Where a call's argument vectors live: on the stack for ordinary kernels.
template <class T, size_t N>
class SmallArray {
 public:
  explicit SmallArray(size_t n) : data_(n <= N ? stack_ : (heap_ = std::make_unique<T[]>(n)).get()) {}
  T& operator[](size_t i) { return data_[i]; }
  T* data() { return data_; }

 private:
  T stack_[N]{};
  std::unique_ptr<T[]> heap_;
  T* data_;
};

int32_t Launch(Function* f, hetrt_value_t* args, int32_t* codes, int32_t num_args) {
  hetrt_instance* inst = f->module->inst;
  auto fail = [&](const std::string& why) {
    inst->ReportError("Vulkan kernel '" + f->name + "': " + why);
    return -1;
  };
  auto fail_with = [inst](hetrt_error_t* e) { return sdk::FailCall(inst->host, e); };
  const auto num_params = static_cast<int32_t>(f->arg_types.size());
  const auto num_tags = static_cast<int32_t>(f->launch.slots.size());
  const int32_t expected = num_params + f->launch.num_launch_args();
  if (num_args != expected)
    return fail("takes " + std::to_string(expected) + " arguments (" + std::to_string(f->num_buffers) + " buffers + " +
                std::to_string(f->num_scalars) + " scalars + " + std::to_string(expected - num_params) +
                " launch values), got " + std::to_string(num_args));
  const int device_id = Current::Device(inst->serial);
  Device* d = inst->devices.at(device_id);
  if (d == nullptr)
    return fail("no Vulkan device " + std::to_string(device_id) + " (" + std::to_string(inst->devices.count()) +
                " found)");
  Pipeline* p = f->pipelines[static_cast<size_t>(device_id)].load(std::memory_order_acquire);
  if (p == nullptr) {
    std::lock_guard<std::mutex> lock(f->build_mutex);
    p = f->pipelines[static_cast<size_t>(device_id)].load(std::memory_order_relaxed);
    if (p == nullptr) {
      if (hetrt_error_t* e = BuildPipeline(f, d, &p)) return fail_with(e);
      f->pipelines[static_cast<size_t>(device_id)].store(p, std::memory_order_release);
    }
  }
  const uint32_t bindings = f->num_buffers + (f->ubo ? 1 : 0);
  SmallArray<VkDescriptorBufferInfo, 16> infos(bindings);
  for (uint32_t i = 0; i < f->num_buffers; ++i) {
    const auto* b = static_cast<const Buffer*>(args[i].v_handle);
    if (codes[i] != HETRT_TYPE_HANDLE || b == nullptr || b->magic != kBufferMagic ||
        b->kind == HETRT_MEMORY_HOST_PINNED)
      return fail("argument " + std::to_string(i) + " is not a Vulkan buffer");
    if (b->device_id != device_id)
      return fail("argument " + std::to_string(i) + " lives on Vulkan device " + std::to_string(b->device_id) +
                  ", the kernel runs on " + std::to_string(device_id));
    infos[i] = {b->buffer, 0,
                std::min<uint64_t>(std::max<uint64_t>(b->size, 4), d->props.limits.maxStorageBufferRange)};
  }
  // Scalars: an 8-byte slot each; 32-bit values in the low half.
  SmallArray<uint64_t, 16> slots(f->num_scalars);
  for (uint32_t j = 0; j < f->num_scalars; ++j) {
    const DLDataType t = f->arg_types[f->num_buffers + j];
    const hetrt_value_t v = args[f->num_buffers + j];
    if (t.code == kDLFloat && t.bits == 32) {
      const float x = static_cast<float>(v.v_float64);
      std::memcpy(&slots[j], &x, 4);
    } else if (t.code == kDLFloat) {
      std::memcpy(&slots[j], &v.v_float64, 8);
    } else if (t.bits == 32) {
      const auto x = static_cast<uint32_t>(v.v_int64);
      std::memcpy(&slots[j], &x, 4);
    } else {
      std::memcpy(&slots[j], &v.v_int64, 8);
    }
  }
  uint32_t groups[3] = {1, 1, 1};
  for (int32_t t = 0; t < num_tags; ++t) {
    const int slot = f->launch.slots[static_cast<size_t>(t)];
    const int64_t v = args[num_params + t].v_int64;
    if (slot >= 3 || v <= 0) continue;  // threadIdx.*: compiled into the shader
    if (static_cast<uint64_t>(v) > d->props.limits.maxComputeWorkGroupCount[slot])
      return fail("blockIdx." + std::string(1, static_cast<char>('x' + slot)) + " = " + std::to_string(v) +
                  " exceeds the device's maxComputeWorkGroupCount (" +
                  std::to_string(d->props.limits.maxComputeWorkGroupCount[slot]) + ")");
    groups[slot] = static_cast<uint32_t>(v);
  }
  StreamCore* s = CurrentStream(inst, d);
  std::lock_guard<std::mutex> lock(s->mutex);
  const uint32_t scalar_bytes = 8 * f->num_scalars;
  if (f->ubo) {  // a slice of its own per dispatch: earlier dispatches of the batch keep theirs
    uint8_t* host = nullptr;
    uint64_t offset = 0;
    VkBuffer ubo = VK_NULL_HANDLE;
    if (hetrt_error_t* e =
            TransientSlice(s, scalar_bytes, d->props.limits.minUniformBufferOffsetAlignment, &ubo, &offset, &host))
      return fail_with(e);
    std::memcpy(host, slots.data(), scalar_bytes);
    infos[f->num_buffers] = {ubo, offset, scalar_bytes};
  }
  VkCommandBuffer cb = VK_NULL_HANDLE;
  if (hetrt_error_t* e = BeginWork(s, &cb)) return fail_with(e);
  vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p->pipeline);
  if (bindings > 0) {
    SmallArray<VkWriteDescriptorSet, 16> writes(bindings);
    for (uint32_t i = 0; i < bindings; ++i) {
      writes[i] = VkStruct<VkWriteDescriptorSet>(VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET);
      writes[i].dstBinding = i;
      writes[i].descriptorCount = 1;
      writes[i].descriptorType =
          i < f->num_buffers ? VK_DESCRIPTOR_TYPE_STORAGE_BUFFER : VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER;
      writes[i].pBufferInfo = &infos[i];
    }
    if (p->push_descriptors) {
      d->push_descriptor(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p->layout, 0, bindings, writes.data());
    } else {
      VkDescriptorSet set = VK_NULL_HANDLE;
      if (hetrt_error_t* e = AllocateDescriptorSet(s, p->set_layout, &set)) return fail_with(e);
      for (uint32_t i = 0; i < bindings; ++i) writes[i].dstSet = set;
      vkUpdateDescriptorSets(d->handle, bindings, writes.data(), 0, nullptr);
      vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p->layout, 0, 1, &set, 0, nullptr);
    }
  }
  if (!f->ubo && scalar_bytes > 0)
    vkCmdPushConstants(cb, p->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, scalar_bytes, slots.data());
  vkCmdDispatch(cb, groups[0], groups[1], groups[2]);
  if (hetrt_error_t* e = EndWork(s)) return fail_with(e);
  return 0;
}

// The packed function TVM host code calls; no exception leaves it.
constexpr hetrt_packed_cfunc_t LaunchKernel = sdk::GuardedLaunch<Function, Launch, kLabel>;

// ---- Module table ----

bool SupportedScalar(DLDataType t) {
  if (t.lanes != 1) return false;
  if (t.code == kDLInt || t.code == kDLUInt) return t.bits == 32 || t.bits == 64;
  return t.code == kDLFloat && (t.bits == 32 || t.bits == 64);
}

std::string TypeName(DLDataType t) {
  const char* code = t.code == kDLInt ? "int" : t.code == kDLUInt ? "uint" : t.code == kDLFloat ? "float" : "type";
  return code + std::to_string(t.bits) + (t.lanes != 1 ? "x" + std::to_string(t.lanes) : "");
}

// Checks one function against its shader and fills the launch description.
hetrt_error_t* Prepare(Function* f, const sdk::FunctionInfo& info) {
  auto bad = [&](const std::string& why) {
    return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "Vulkan kernel '" + f->name + "': " + why);
  };
  for (const DLDataType& t : f->arg_types) {
    if (t.code == kDLOpaqueHandle) {
      if (f->num_scalars > 0) return bad("a buffer argument follows a scalar (TVM puts every buffer first)");
      ++f->num_buffers;
    } else if (SupportedScalar(t)) {
      ++f->num_scalars;
    } else {
      return bad("unsupported argument type " + TypeName(t) + " (int32/64, uint32/64, float32/64 or a buffer)");
    }
  }
  if (std::string why = sdk::ParseLaunchTags(info.launch_param_tags, &f->launch); !why.empty()) return bad(why);
  const Shader& s = *f->shader;
  f->ubo = (s.flag & kUboFlag) != 0;
  if (std::find(s.entry_points.begin(), s.entry_points.end(), f->name) == s.entry_points.end()) {
    std::string found;
    for (const std::string& e : s.entry_points) found += (found.empty() ? "" : ", ") + e;
    return bad("its shader has no GLCompute entry point named '" + f->name +
               "' (found: " + (found.empty() ? "none" : found) + ")");
  }
  if (s.other_sets) return bad("its shader uses a descriptor set other than 0");
  const uint32_t bindings = f->num_buffers + (f->ubo ? 1 : 0);
  for (uint32_t b : s.bindings)
    if (b >= bindings)
      return bad("its shader reads binding " + std::to_string(b) + " but the function passes " +
                 std::to_string(f->num_buffers) + " buffer(s)" + (f->ubo ? " and a uniform buffer" : ""));
  return nullptr;
}

hetrt_error_t* Load(hetrt_module_load_args_t* args) {
  auto bad = [](const std::string& why) { return MakeError(HETRT_STATUS_DATA_LOSS, "Vulkan module blob: " + why); };
  if (hetrt_error_t* e = sdk::CheckLoadArgs<kLabel>(args, "vulkan")) return e;
  sdk::BlobReader r({args->data, static_cast<size_t>(args->size)});
  auto module = std::make_unique<hetrt_plugin_module>();
  module->inst = args->self;
  if (!r.Str(&module->fmt)) return bad("truncated format string");
  if (module->fmt != "vulkan")
    return MakeError(HETRT_STATUS_UNIMPLEMENTED, "Vulkan module format '" + module->fmt + "' (TVM writes 'vulkan')");
  if (std::string why = sdk::ReadFunctionMap(r, &module->fmap); !why.empty()) return bad(why);
  uint64_t count = 0;
  if (!r.Count(&count, 20)) return bad("shader count does not fit the blob");
  for (uint64_t i = 0; i < count; ++i) {
    auto s = std::make_unique<Shader>();
    uint64_t words = 0;
    if (!r.Str(&s->key)) return bad("shader " + std::to_string(i) + ": truncated name");
    if (!r.Pod(&s->flag) || !r.Pod(&words)) return bad("shader '" + s->key + "': truncated header");
    if (!r.Words(words, &s->words))
      return bad("shader '" + s->key + "': " + std::to_string(words) + " SPIR-V words announced, " +
                 std::to_string(r.left() / 4) + " left in the blob");
    for (const auto& other : module->shaders)
      if (other->key == s->key) return bad("shader '" + s->key + "' listed twice");
    module->shaders.push_back(std::move(s));
  }
  const bool validate = args->self->validate_spirv.load();
  for (auto& s : module->shaders)
    if (std::string why = InspectShader(s.get(), validate); !why.empty())
      return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "Vulkan shader '" + s->key + "': " + why);
  const size_t devices = static_cast<size_t>(args->self->devices.count());
  for (const auto& [key, info] : module->fmap) {
    auto f = std::make_unique<Function>();
    f->module = module.get();
    f->name = key;
    f->arg_types = info.arg_types;
    for (const auto& s : module->shaders)
      if (s->key == f->name) f->shader = s.get();
    if (f->shader == nullptr) return bad("function '" + f->name + "' has no shader");
    if (hetrt_error_t* e = Prepare(f.get(), info)) return e;
    f->pipelines = std::make_unique<std::atomic<Pipeline*>[]>(std::max<size_t>(devices, 1));
    module->functions.Add(f->name, f.get());
    module->all_functions.push_back(std::move(f));
  }
  args->consumed = r.offset();
  args->module = module.release();
  return nullptr;
}

// The conformance sample (ABI 2.1): the SDK's c = a + b in TVM's Vulkan blob
// layout, its shader compiled from shaders/sample_add.comp.
hetrt_error_t* Sample(hetrt_module_sample_args_t* args) {
  if (args->device.device_type != kDLVulkan)
    return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "the Vulkan sample runs on a Vulkan device");
  static const struct : sdk::AddSample {
    std::vector<uint8_t> blob = [] {
      sdk::BlobWriter w;
      w.Str("vulkan");
      sdk::WriteFunctionMap(w, Functions());
      w.Pod<uint64_t>(1);  // one shader, its key the function's name; scalars in push constants
      w.Str(kName);
      w.Pod<uint32_t>(0);
      w.Pod<uint64_t>(std::size(kSampleAddSpirv));
      w.Words(kSampleAddSpirv);
      return w.Take();
    }();
  } sample;
  sample.Set(args, "vulkan", sample.blob);
  return nullptr;
}

}  // namespace

const hetrt_module_api_t kModuleApi = sdk::ModuleTable<hetrt_plugin_module, LaunchKernel, kLabel, Load, Sample>();

}  // namespace hetrt::vulkan
