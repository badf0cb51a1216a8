// DLPack data types and their TVM string forms ("float32", "int8", "float32x4", "bool").
#pragma once

#include <dlpack/dlpack.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "hetrt/base/status.h"

// DLDataType is a C struct in the global namespace; its comparison lives
// there too so that lookup finds it from any namespace (gtest included).
inline bool operator==(DLDataType a, DLDataType b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}
inline bool operator!=(DLDataType a, DLDataType b) { return !(a == b); }

namespace hetrt {

inline constexpr DLDataType kInt32{kDLInt, 32, 1};
inline constexpr DLDataType kFloat32{kDLFloat, 32, 1};

// Parses "float32", "uint8", "int64", "bool", "handle", "bfloat16", "float16x4", ...
Result<DLDataType> ParseDataType(std::string_view text);
std::string DataTypeToString(DLDataType type);

// Bytes per element, lanes included, rounded up to whole bytes.
inline uint64_t DataTypeBytes(DLDataType type) { return (static_cast<uint64_t>(type.bits) * type.lanes + 7) / 8; }

// True for the type codes hetrt knows (int, uint, float, handle, bfloat, complex, bool).
bool IsKnownDataTypeCode(uint8_t code);

// "cpu", "cuda", "opencl", ... for a DLDeviceType; "device_type_<n>" otherwise.
std::string DeviceTypeName(int32_t device_type);
// Accepts "cpu", "cuda", "opencl", "vulkan", "metal", "rocm", "ext_dev", "micro".
Result<int32_t> ParseDeviceTypeName(std::string_view name);
// "cpu:0"
std::string DeviceToString(DLDevice device);
// Same type and id.
inline bool SameDevice(DLDevice a, DLDevice b) { return a.device_type == b.device_type && a.device_id == b.device_id; }
// "cpu", "cpu:1", "opencl:0"
Result<DLDevice> ParseDevice(std::string_view text);

}  // namespace hetrt
