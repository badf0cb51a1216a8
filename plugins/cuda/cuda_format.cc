#include "cuda_format.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>

namespace hetrt::cuda {
namespace {

using Reader = sdk::BlobReader;

std::string_view AsText(std::span<const uint8_t> data) {
  return {reinterpret_cast<const char*>(data.data()), data.size()};
}

std::string HexPrefix(std::span<const uint8_t> data) {
  std::string s;
  char byte[4];
  for (size_t i = 0; i < data.size() && i < 8; ++i) {
    std::snprintf(byte, sizeof byte, "%s%02x", i ? " " : "", data[i]);
    s += byte;
  }
  return s;
}

// Entries of a fatbin: the header (magic, u16 version, u16 header size, u64
// size of what follows), then entries of u16 kind (1 PTX, 2 ELF), u16, u32
// entry header size, u64 payload size, ..., u32 arch at +28.
std::string DescribeFatbin(std::span<const uint8_t> data) {
  Reader r(data);
  uint32_t magic = 0;
  uint16_t version = 0, header_size = 0;
  uint64_t fat_size = 0;
  if (!r.Pod(&magic) || !r.Pod(&version) || !r.Pod(&header_size) || !r.Pod(&fat_size))
    return "fatbin (truncated header)";
  std::string entries;
  uint64_t at = header_size;
  const uint64_t end = std::min<uint64_t>(data.size(), header_size + fat_size);
  while (at + 32 <= end) {
    uint16_t kind = 0;
    uint32_t entry_header = 0, arch = 0;
    uint64_t payload = 0;
    std::memcpy(&kind, data.data() + at, 2);
    std::memcpy(&entry_header, data.data() + at + 4, 4);
    std::memcpy(&payload, data.data() + at + 8, 8);
    std::memcpy(&arch, data.data() + at + 28, 4);
    entries += entries.empty() ? "" : ", ";
    entries += kind == 1   ? "compute_" + std::to_string(arch) + " PTX"
               : kind == 2 ? "sm_" + std::to_string(arch) + " cubin"
                           : "entry of kind " + std::to_string(kind);
    if (entry_header == 0 || payload > end - at - entry_header) break;
    at += entry_header + payload;
  }
  return "fatbin: " + (entries.empty() ? std::string("no entries") : entries);
}

// A cubin's SM from its ELF header: e_flags holds it in bits 8-15 from ELF ABI
// version 8 (nvcc 13), in bits 0-7 before.
std::string DescribeCubin(std::span<const uint8_t> data) {
  uint32_t flags = 0;
  if (data.size() < 64 || data[4] != 2 /* ELFCLASS64 */) return "cubin";
  std::memcpy(&flags, data.data() + 48, 4);
  const uint32_t sm = data[8] >= 8 ? (flags >> 8) & 0xff : flags & 0xff;
  return sm ? "cubin for sm_" + std::to_string(sm) : "cubin";
}

}  // namespace

ImageKind DetectImage(std::span<const uint8_t> data) {
  if (data.size() >= 4) {
    uint32_t magic = 0;
    std::memcpy(&magic, data.data(), 4);
    if (magic == kFatbinMagic) return ImageKind::kFatbin;
    if (std::memcmp(data.data(),
                    "\x7f"
                    "ELF",
                    4) == 0)
      return ImageKind::kCubin;
  }
  const std::string_view text = AsText(data);
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos || (text[first] != '/' && text[first] != '.')) return ImageKind::kUnknown;
  // Text, with the directive every PTX file carries.
  if (text.find('\0') != std::string_view::npos || PtxDirective(text, ".version").empty()) return ImageKind::kUnknown;
  return ImageKind::kPtx;
}

const char* ImageKindName(ImageKind kind) {
  switch (kind) {
    case ImageKind::kPtx: return "PTX";
    case ImageKind::kCubin: return "cubin";
    case ImageKind::kFatbin: return "fatbin";
    default: return "unknown";
  }
}

std::string PtxDirective(std::string_view ptx, std::string_view directive) {
  size_t at = 0;
  while (at < ptx.size()) {
    size_t eol = ptx.find('\n', at);
    if (eol == std::string_view::npos) eol = ptx.size();
    std::string_view line = ptx.substr(at, eol - at);
    at = eol + 1;
    line.remove_prefix(std::min(line.size(), line.find_first_not_of(" \t\r")));
    if (line.size() <= directive.size() || line.compare(0, directive.size(), directive) != 0) continue;
    line.remove_prefix(directive.size());
    if (line[0] != ' ' && line[0] != '\t') continue;  // ".versionx" is another word
    line.remove_prefix(std::min(line.size(), line.find_first_not_of(" \t")));
    return std::string(line.substr(0, line.find_first_of(" \t\r,;/")));
  }
  return "";
}

std::string DescribeImage(std::span<const uint8_t> data) {
  switch (DetectImage(data)) {
    case ImageKind::kPtx: {
      const std::string target = PtxDirective(AsText(data), ".target");
      return "PTX " + PtxDirective(AsText(data), ".version") + (target.empty() ? "" : " for " + target);
    }
    case ImageKind::kCubin: return DescribeCubin(data);
    case ImageKind::kFatbin: return DescribeFatbin(data);
    default: return "unknown (first bytes " + HexPrefix(data) + ")";
  }
}

std::string ParseModuleBlob(std::span<const uint8_t> data, ModuleBlob* out, uint64_t* consumed) {
  Reader r(data);
  ModuleBlob blob;
  if (!r.Str(&blob.fmt)) return "truncated format string";
  if (std::string why = sdk::ReadFunctionMap(r, &blob.functions); !why.empty()) return why;
  if (!r.Str(&blob.data)) return "truncated module data";
  *consumed = r.offset();
  *out = std::move(blob);
  return "";
}

std::vector<uint8_t> SerializeModuleBlob(const ModuleBlob& blob) {
  sdk::BlobWriter w;
  w.Str(blob.fmt);
  sdk::WriteFunctionMap(w, blob.functions);
  w.Str(blob.data);
  return w.Take();
}

std::string ComputeGeometry(const LaunchTags& tags, const hetrt_value_t* launch_args, LaunchGeometry* out) {
  uint32_t work[6] = {1, 1, 1, 1, 1, 1};
  constexpr int64_t kMax = std::numeric_limits<uint32_t>::max();
  static const char* const kNames[6] = {"blockIdx.x",  "blockIdx.y",  "blockIdx.z",
                                        "threadIdx.x", "threadIdx.y", "threadIdx.z"};
  for (size_t i = 0; i < tags.slots.size(); ++i) {
    const int64_t v = launch_args[i].v_int64;
    if (v > kMax) return std::string(kNames[tags.slots[i]]) + " = " + std::to_string(v) + " exceeds 2^32 - 1";
    if (v > 0) work[tags.slots[i]] = static_cast<uint32_t>(v);
  }
  LaunchGeometry g;
  std::copy(work, work + 3, g.grid.begin());
  std::copy(work + 3, work + 6, g.block.begin());
  if (tags.dynamic_shared_memory) {
    const int64_t bytes = launch_args[tags.slots.size()].v_int64;
    if (bytes < 0 || bytes > kMax) return "dynamic shared memory of " + std::to_string(bytes) + " bytes";
    g.dynamic_shared_bytes = static_cast<uint32_t>(bytes);
  }
  *out = g;
  return "";
}

std::string DescribeGeometry(const LaunchGeometry& g) {
  char text[160];
  std::snprintf(text, sizeof text, "grid (%u, %u, %u), block (%u, %u, %u), %u bytes of dynamic shared memory",
                g.grid[0], g.grid[1], g.grid[2], g.block[0], g.block[1], g.block[2], g.dynamic_shared_bytes);
  return text;
}

std::string PlanArguments(const std::vector<DLDataType>& types, ArgPlan* out) {
  ArgPlan plan;
  for (size_t i = 0; i < types.size(); ++i) {
    const DLDataType t = types[i];
    const std::string where = "argument " + std::to_string(i) + ": ";
    if (t.lanes != 1)
      return where + "vector types (lanes " + std::to_string(t.lanes) + ") cannot be passed to a kernel";
    ArgConversion c;
    if (t.code == kDLOpaqueHandle)
      c = ArgConversion::kHandle;
    else if ((t.code == kDLInt || t.code == kDLUInt) && t.bits == 32)
      c = ArgConversion::kInt64ToInt32;
    else if ((t.code == kDLInt || t.code == kDLUInt) && t.bits == 64)
      c = ArgConversion::kInt64;
    else if (t.code == kDLFloat && t.bits == 32)
      c = ArgConversion::kFloat64ToFloat32;
    else if (t.code == kDLFloat && t.bits == 64)
      c = ArgConversion::kFloat64;
    else
      return where + "type code " + std::to_string(t.code) + " with " + std::to_string(t.bits) +
             " bits cannot be passed to a kernel (TVM passes handles, int32/64, uint32/64, float32/64)";
    plan.num_handles += c == ArgConversion::kHandle;
    plan.conversions.push_back(c);
  }
  *out = std::move(plan);
  return "";
}

uint32_t ArgWidth(ArgConversion c) {
  return c == ArgConversion::kInt64ToInt32 || c == ArgConversion::kFloat64ToFloat32 ? 4 : 8;
}

int PackArguments(const ArgPlan& plan, const hetrt_value_t* args, const int32_t* type_codes, uint64_t* slots,
                  void** params) {
  for (size_t i = 0; i < plan.conversions.size(); ++i) {
    const int32_t code = type_codes[i];
    slots[i] = 0;
    void* slot = &slots[i];
    switch (plan.conversions[i]) {
      case ArgConversion::kHandle:
        if (code != HETRT_TYPE_HANDLE && code != HETRT_TYPE_NULL) return static_cast<int>(i);
        std::memcpy(slot, &args[i].v_handle, sizeof(void*));
        break;
      case ArgConversion::kInt64ToInt32: {
        if (code != HETRT_TYPE_INT && code != HETRT_TYPE_UINT) return static_cast<int>(i);
        const auto v = static_cast<uint32_t>(args[i].v_int64);
        std::memcpy(slot, &v, sizeof v);
        break;
      }
      case ArgConversion::kInt64:
        if (code != HETRT_TYPE_INT && code != HETRT_TYPE_UINT) return static_cast<int>(i);
        std::memcpy(slot, &args[i].v_int64, sizeof(int64_t));
        break;
      case ArgConversion::kFloat64ToFloat32: {
        if (code != HETRT_TYPE_FLOAT) return static_cast<int>(i);
        const auto v = static_cast<float>(args[i].v_float64);
        std::memcpy(slot, &v, sizeof v);
        break;
      }
      case ArgConversion::kFloat64:
        if (code != HETRT_TYPE_FLOAT) return static_cast<int>(i);
        std::memcpy(slot, &args[i].v_float64, sizeof(double));
        break;
    }
    params[i] = slot;
  }
  return -1;
}

}  // namespace hetrt::cuda
