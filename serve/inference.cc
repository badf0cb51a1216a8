#include "hetrt/serve/inference.h"

namespace hetrt::serve {
namespace {

constexpr uint8_t kBoolCode = 6;  // DLPack's kDLBool (newer headers than Debian's)

struct NamedType {
  const char* name;
  DLDataType dtype;
};
constexpr NamedType kTypes[] = {
    {"BOOL", {kBoolCode, 8, 1}},  {"UINT8", {kDLUInt, 8, 1}},   {"UINT16", {kDLUInt, 16, 1}},
    {"UINT32", {kDLUInt, 32, 1}}, {"UINT64", {kDLUInt, 64, 1}}, {"INT8", {kDLInt, 8, 1}},
    {"INT16", {kDLInt, 16, 1}},   {"INT32", {kDLInt, 32, 1}},   {"INT64", {kDLInt, 64, 1}},
    {"FP16", {kDLFloat, 16, 1}},  {"FP32", {kDLFloat, 32, 1}},  {"FP64", {kDLFloat, 64, 1}},
    {"BF16", {kDLBfloat, 16, 1}},
};

}  // namespace

std::optional<DLDataType> DataTypeFromProtocol(std::string_view name) {
  for (const NamedType& t : kTypes)
    if (name == t.name) return t.dtype;
  return std::nullopt;
}

std::string ProtocolDataType(DLDataType dtype) {
  // TVM writes booleans as uint1 or bool8; both travel as one byte per element.
  if ((dtype.code == kDLUInt || dtype.code == kBoolCode) && dtype.bits == 1 && dtype.lanes == 1) return "BOOL";
  for (const NamedType& t : kTypes)
    if (t.dtype.code == dtype.code && t.dtype.bits == dtype.bits && dtype.lanes == 1) return t.name;
  return "";
}

int HttpStatusOf(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk: return 200;
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
    case StatusCode::kDataLoss: return 400;
    case StatusCode::kNotFound: return 404;
    case StatusCode::kUnavailable:
    case StatusCode::kResourceExhausted: return 503;
    default: return 500;
  }
}

}  // namespace hetrt::serve
