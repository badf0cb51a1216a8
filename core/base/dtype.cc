#include "hetrt/base/dtype.h"

#include <charconv>

namespace hetrt {
namespace {

constexpr uint8_t kBoolCode = 6;  // DLPack's kDLBool (newer headers)

bool ParseUint(std::string_view text, uint32_t* out) {
  if (text.empty()) return false;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

struct DeviceTypeNameEntry {
  int32_t type;
  const char* name;
};
constexpr DeviceTypeNameEntry kDeviceTypeNames[] = {
    {kDLCPU, "cpu"},     {kDLCUDA, "cuda"}, {kDLCUDAHost, "cuda_host"}, {kDLOpenCL, "opencl"},  {kDLVulkan, "vulkan"},
    {kDLMetal, "metal"}, {kDLVPI, "vpi"},   {kDLROCM, "rocm"},          {kDLExtDev, "ext_dev"}, {14, "oneapi"},
    {15, "webgpu"},      {16, "hexagon"},
};

}  // namespace

bool IsKnownDataTypeCode(uint8_t code) { return code <= kBoolCode; }

Result<DLDataType> ParseDataType(std::string_view text) {
  const std::string original(text);
  auto bad = [&](const char* why) { return InvalidArgument("bad dtype '" + original + "': " + why); };
  if (text == "bool") return DLDataType{kDLUInt, 1, 1};
  if (text == "handle") return DLDataType{kDLOpaqueHandle, 64, 1};
  uint32_t lanes = 1;
  // Lanes follow an 'x' after the bit width ("float32x4"); "complex" has an x of its own.
  if (auto x = text.find('x', text.find_first_of("0123456789")); x != std::string_view::npos) {
    if (!ParseUint(text.substr(x + 1), &lanes) || lanes == 0 || lanes > 65535)
      return bad("lanes after 'x' must be 1..65535");
    text = text.substr(0, x);
  }
  struct Prefix {
    const char* name;
    uint8_t code;
  };
  // Longest prefixes first: "bfloat" before "float", "uint" before "int".
  constexpr Prefix kPrefixes[] = {
      {"bfloat", kDLBfloat}, {"float", kDLFloat}, {"uint", kDLUInt}, {"int", kDLInt}, {"complex", kDLComplex}};
  for (const Prefix& p : kPrefixes) {
    std::string_view name(p.name);
    if (text.substr(0, name.size()) != name) continue;
    uint32_t bits = 0;
    const std::string_view width = text.substr(name.size());
    // TVM's float8_e4m3fn, float8_e5m2, float4_e2m1fn...: DLPack 0.6 has no code for them.
    if (p.code == kDLFloat && width.find('_') != std::string_view::npos)
      return Unimplemented("dtype '" + original + "': " + std::string(width.substr(0, width.find('_'))) +
                           "-bit float formats (float8_e4m3fn, float8_e5m2, float4_e2m1fn) are not supported");
    if (!ParseUint(width, &bits) || bits == 0 || bits > 255) return bad("bit width must be 1..255");
    return DLDataType{p.code, static_cast<uint8_t>(bits), static_cast<uint16_t>(lanes)};
  }
  return bad("expected int<N>, uint<N>, float<N>, bfloat<N>, complex<N>, bool or handle");
}

std::string DataTypeToString(DLDataType type) {
  if (type.code == kDLUInt && type.bits == 1 && type.lanes == 1) return "bool";
  if (type.code == kDLOpaqueHandle) return "handle";
  std::string base;
  switch (type.code) {
    case kDLInt: base = "int"; break;
    case kDLUInt: base = "uint"; break;
    case kDLFloat: base = "float"; break;
    case kDLBfloat: base = "bfloat"; break;
    case kDLComplex: base = "complex"; break;
    case kBoolCode: base = "bool"; break;
    default: base = "code" + std::to_string(type.code) + "_"; break;
  }
  base += std::to_string(type.bits);
  if (type.lanes != 1) base += "x" + std::to_string(type.lanes);
  return base;
}

std::string DeviceTypeName(int32_t device_type) {
  for (const auto& e : kDeviceTypeNames)
    if (e.type == device_type) return e.name;
  return "device_type_" + std::to_string(device_type);
}

Result<int32_t> ParseDeviceTypeName(std::string_view name) {
  for (const auto& e : kDeviceTypeNames)
    if (name == e.name) return e.type;
  if (name == "gpu") return static_cast<int32_t>(kDLCUDA);
  if (name == "micro") return static_cast<int32_t>(kDLExtDev);
  std::string known;
  for (const auto& e : kDeviceTypeNames) known += std::string(known.empty() ? "" : ", ") + e.name;
  return InvalidArgument("unknown device '" + std::string(name) + "' (known: " + known + ")");
}

std::string DeviceToString(DLDevice device) {
  return DeviceTypeName(device.device_type) + ":" + std::to_string(device.device_id);
}

Result<DLDevice> ParseDevice(std::string_view text) {
  std::string_view type_name = text;
  uint32_t id = 0;
  if (auto colon = text.find(':'); colon != std::string_view::npos) {
    type_name = text.substr(0, colon);
    if (!ParseUint(text.substr(colon + 1), &id) || id > 1u << 20)
      return InvalidArgument("bad device '" + std::string(text) + "': expected NAME[:INDEX]");
  }
  HETRT_ASSIGN_OR_RETURN(int32_t type, ParseDeviceTypeName(type_name));
  return DLDevice{static_cast<DLDeviceType>(type), static_cast<int32_t>(id)};
}

}  // namespace hetrt
