#include "hetrt/formats/device_payloads.h"

#include <array>

#include "hetrt/sdk/byte_stream.h"

namespace hetrt {
namespace {

struct FunctionInfo {
  std::string key;
  std::string name;
  std::vector<std::array<uint8_t, 4>> arg_types;  // DLDataType as stored
  std::vector<std::string> tags;
  std::vector<int32_t> extra_tags;  // v0.21+: one per argument, 0 none, 1 TensorMap
};

struct Shader {
  std::string name;
  uint32_t flag = 0;
  std::vector<uint32_t> words;
};

// Everything a cuda/opencl/vulkan payload holds; `code` for cuda/opencl,
// `shaders` for vulkan.
struct Payload {
  std::string format;
  std::vector<FunctionInfo> functions;
  std::string code;
  std::vector<Shader> shaders;
};

bool IsVulkan(std::string_view kind) { return kind == "vulkan"; }

Status ReadFunctionInfo(ByteReader& r, bool ffi, FunctionInfo* f) {
  HETRT_RETURN_IF_ERROR(r.ReadString(&f->key, "function name"));
  const std::string field = "function '" + f->key + "'";
  HETRT_RETURN_IF_ERROR(r.ReadString(&f->name, field + " info name"));
  uint64_t count = 0;
  HETRT_RETURN_IF_ERROR(r.ReadCount(&count, 4, field + " arg_types"));
  f->arg_types.resize(static_cast<size_t>(count));
  for (auto& t : f->arg_types)
    for (uint8_t& b : t) HETRT_RETURN_IF_ERROR(r.ReadU8(&b, field + " arg_types"));
  HETRT_RETURN_IF_ERROR(r.ReadCount(&count, 8, field + " launch_param_tags"));
  f->tags.resize(static_cast<size_t>(count));
  for (std::string& tag : f->tags) HETRT_RETURN_IF_ERROR(r.ReadString(&tag, field + " launch_param_tags"));
  if (!ffi) return OkStatus();
  HETRT_RETURN_IF_ERROR(r.ReadCount(&count, 4, field + " arg_extra_tags"));
  f->extra_tags.resize(static_cast<size_t>(count));
  for (int32_t& t : f->extra_tags) HETRT_RETURN_IF_ERROR(r.ReadI32(&t, field + " arg_extra_tags"));
  return OkStatus();
}

Status ReadShader(ByteReader& r, bool wrapped, Shader* s) {
  HETRT_RETURN_IF_ERROR(r.ReadString(&s->name, "shader name"));
  const std::string field = "shader '" + s->name + "'";
  uint64_t outer = 0;
  if (wrapped) HETRT_RETURN_IF_ERROR(r.ReadU64(&outer, field + " length"));
  HETRT_RETURN_IF_ERROR(r.ReadU32(&s->flag, field + " flag"));
  uint64_t count = 0;
  HETRT_RETURN_IF_ERROR(r.ReadCount(&count, 4, field + " words"));
  if (wrapped && outer != 12 + 4 * count)
    return r.Error(field, "wrapper length " + std::to_string(outer) + " is not 12 + 4 x " + std::to_string(count) +
                              " words");
  s->words.resize(static_cast<size_t>(count));
  for (uint32_t& w : s->words) HETRT_RETURN_IF_ERROR(r.ReadU32(&w, field + " words"));
  return OkStatus();
}

// Whether the shaders from the reader's position are wrapped (v0.24+): the
// first one's u64 after its name equals 12 + 4 x the word count behind it.
bool ShadersLookWrapped(ByteReader r) {
  std::string name;
  uint64_t outer = 0, words = 0;
  uint32_t flag = 0;
  return r.ReadString(&name, "").ok() && r.ReadU64(&outer, "").ok() && r.ReadU32(&flag, "").ok() &&
         r.ReadU64(&words, "").ok() && words < (uint64_t{1} << 60) && outer == 12 + 4 * words;
}

Result<Payload> ReadPayload(std::string_view kind, std::span<const uint8_t> bytes, bool ffi, const std::string& source) {
  ByteReader r(bytes, source + ": " + std::string(kind) + " payload");
  Payload p;
  HETRT_RETURN_IF_ERROR(r.ReadString(&p.format, "format"));
  uint64_t count = 0;
  HETRT_RETURN_IF_ERROR(r.ReadCount(&count, 8 * 4, "function map"));
  p.functions.resize(static_cast<size_t>(count));
  for (FunctionInfo& f : p.functions) HETRT_RETURN_IF_ERROR(ReadFunctionInfo(r, ffi, &f));
  if (IsVulkan(kind)) {
    HETRT_RETURN_IF_ERROR(r.ReadCount(&count, 8 + 4 + 8, "shader count"));
    const bool wrapped = ffi && count > 0 && ShadersLookWrapped(r);
    p.shaders.resize(static_cast<size_t>(count));
    for (Shader& s : p.shaders) HETRT_RETURN_IF_ERROR(ReadShader(r, wrapped, &s));
  } else {
    HETRT_RETURN_IF_ERROR(r.ReadString(&p.code, "code"));
  }
  if (r.remaining() != 0) return r.Error("end", std::to_string(r.remaining()) + " trailing byte(s)");
  return p;
}

std::vector<uint8_t> WritePayload(std::string_view kind, const Payload& p, bool ffi, bool wrap_shaders) {
  ByteWriter w;
  w.WriteString(p.format);
  w.WriteU64(p.functions.size());
  for (const FunctionInfo& f : p.functions) {
    w.WriteString(f.key);
    w.WriteString(f.name);
    w.WriteU64(f.arg_types.size());
    for (const auto& t : f.arg_types) w.WriteBytes(t);
    w.WriteU64(f.tags.size());
    for (const std::string& tag : f.tags) w.WriteString(tag);
    if (ffi) {
      w.WriteU64(f.arg_types.size());
      for (size_t i = 0; i < f.arg_types.size(); ++i) w.WritePod<int32_t>(i < f.extra_tags.size() ? f.extra_tags[i] : 0);
    }
  }
  if (IsVulkan(kind)) {
    w.WriteU64(p.shaders.size());
    for (const Shader& s : p.shaders) {
      w.WriteString(s.name);
      if (wrap_shaders) w.WriteU64(12 + 4 * s.words.size());
      w.WritePod<uint32_t>(s.flag);
      w.WriteU64(s.words.size());
      for (uint32_t word : s.words) w.WritePod<uint32_t>(word);
    }
  } else {
    w.WriteString(p.code);
  }
  return w.Take();
}

// v0.24 renamed the tir.* launch tags tirx.*; the v0.18 form knows the old names.
// Flags without an argument (programmatic dependent or cooperative launch) and
// cluster dimensions have no v0.18 equivalent.
Status ToPackedTags(FunctionInfo& f, const std::string& where) {
  for (std::string& tag : f.tags) {
    if (tag.rfind("tirx.", 0) == 0) tag = "tir." + tag.substr(5);
    if (tag == "tir.use_programtic_dependent_launch" || tag == "tir.use_cooperative_launch" ||
        tag.rfind("clusterCtaIdx.", 0) == 0 || tag.rfind("preferredClusterCtaIdx.", 0) == 0)
      return Unimplemented(where + ": kernel '" + f.key + "' uses launch tag '" + tag +
                           "' (CUDA clusters, programmatic dependent or cooperative launch), which hetrt's plugins "
                           "do not launch");
  }
  if (!f.extra_tags.empty() && f.extra_tags.size() != f.arg_types.size())
    return DataLoss(where + ": kernel '" + f.key + "' has " + std::to_string(f.extra_tags.size()) +
                    " arg_extra_tags for " + std::to_string(f.arg_types.size()) + " arguments");
  for (size_t i = 0; i < f.extra_tags.size(); ++i) {
    if (f.extra_tags[i] == 0) continue;
    return Unimplemented(where + ": argument " + std::to_string(i) + " of kernel '" + f.key + "' has extra tag " +
                         std::to_string(f.extra_tags[i]) +
                         (f.extra_tags[i] == 1 ? " (a CUDA TensorMap, TMA), which hetrt's plugins do not pass"
                                               : ", which hetrt does not know"));
  }
  f.extra_tags.clear();
  return OkStatus();
}

}  // namespace

bool HasFfiDevicePayloadForm(std::string_view kind) { return kind == "cuda" || kind == "opencl" || IsVulkan(kind); }

Result<std::vector<uint8_t>> DevicePayloadToPackedForm(std::string_view kind, std::span<const uint8_t> payload,
                                                       const std::string& source) {
  if (!HasFfiDevicePayloadForm(kind)) return std::vector<uint8_t>(payload.begin(), payload.end());
  HETRT_ASSIGN_OR_RETURN(Payload p, ReadPayload(kind, payload, /*ffi=*/true, source));
  const std::string where = source + ": " + std::string(kind) + " module";
  if (kind == "cuda" && p.format == "cuda")
    return Unimplemented(where + " holds CUDA C++ source (TVM built it without a CUDA compiler); hetrt loads ptx, "
                                 "cubin and fatbin: build with CUDA available");
  for (FunctionInfo& f : p.functions) HETRT_RETURN_IF_ERROR(ToPackedTags(f, where));
  return WritePayload(kind, p, /*ffi=*/false, /*wrap_shaders=*/false);
}

Result<std::vector<uint8_t>> DevicePayloadToFfiForm(std::string_view kind, std::span<const uint8_t> payload,
                                                    bool wrap_vulkan_shaders, const std::string& source) {
  if (!HasFfiDevicePayloadForm(kind)) return std::vector<uint8_t>(payload.begin(), payload.end());
  HETRT_ASSIGN_OR_RETURN(Payload p, ReadPayload(kind, payload, /*ffi=*/false, source));
  return WritePayload(kind, p, /*ffi=*/true, wrap_vulkan_shaders);
}

}  // namespace hetrt
