// Tensor layout in TVM's text and byte terms, for plugins and readers that do
// not link the core: dtype names ("float32", "int8x4", "bool") to DLPack types
// and back, and the byte size of a shape. Header-only.
#pragma once

#include <dlpack/dlpack.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace hetrt::sdk {

// The DLPack type a TVM dtype name stands for; nullopt for a name that is none.
inline std::optional<DLDataType> DtypeFromName(std::string_view name) {
  if (name == "bool") return DLDataType{kDLUInt, 1, 1};
  static constexpr std::pair<std::string_view, uint8_t> kFamilies[] = {
      {"bfloat", kDLBfloat}, {"float", kDLFloat}, {"uint", kDLUInt}, {"int", kDLInt}, {"complex", kDLComplex}};
  for (const auto& [family, code] : kFamilies) {
    if (!name.starts_with(family)) continue;
    uint32_t bits = 0, lanes = 0;
    bool in_lanes = false;
    for (char c : name.substr(family.size())) {
      if (c == 'x' && !in_lanes && bits) {
        in_lanes = true;
        continue;
      }
      if (c < '0' || c > '9') return std::nullopt;
      uint32_t& field = in_lanes ? lanes : bits;
      field = field * 10 + static_cast<uint32_t>(c - '0');
      if (field > 65535) return std::nullopt;
    }
    if (bits == 0 || bits > 255 || (in_lanes && lanes == 0)) return std::nullopt;
    return DLDataType{code, static_cast<uint8_t>(bits), static_cast<uint16_t>(in_lanes ? lanes : 1)};
  }
  return std::nullopt;
}

inline std::string DtypeName(DLDataType type) {
  if (type.code == kDLUInt && type.bits == 1 && type.lanes == 1) return "bool";
  const char* family = type.code == kDLInt       ? "int"
                       : type.code == kDLUInt    ? "uint"
                       : type.code == kDLFloat   ? "float"
                       : type.code == kDLBfloat  ? "bfloat"
                       : type.code == kDLComplex ? "complex"
                                                 : "code?";
  std::string name = family + std::to_string(type.bits);
  return type.lanes == 1 ? name : name + "x" + std::to_string(type.lanes);
}

// Bytes of one element, lanes included, rounded up to whole bytes.
inline uint64_t DtypeBytes(DLDataType type) { return (uint64_t{type.bits} * type.lanes + 7) / 8; }

// Bytes a dense tensor of `shape` and `type` takes; nullopt for a negative
// dimension or a size past uint64.
inline std::optional<uint64_t> DenseBytes(std::span<const int64_t> shape, DLDataType type) {
  uint64_t total = DtypeBytes(type);
  for (int64_t dim : shape) {
    if (dim < 0) return std::nullopt;
    const auto d = static_cast<uint64_t>(dim);
    if (d != 0 && total > std::numeric_limits<uint64_t>::max() / d) return std::nullopt;
    total *= d;
  }
  return total;
}

}  // namespace hetrt::sdk
