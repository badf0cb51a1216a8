#include "hetrt/sdk/ndarray_format.h"

#include <unordered_set>

#include "hetrt/sdk/tensor_layout.h"

namespace hetrt::sdk {
namespace {

constexpr int32_t kMostDims = 64;         // far above any real model; bounds the shape read
constexpr uint8_t kLastKnownTypeCode = 6;  // DLPack's kDLBool (newer headers)

std::string ShapeText(std::span<const int64_t> shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

}  // namespace

Result<NDArrayView> ReadNDArray(ByteReader& r) {
  uint64_t reserved = 0;
  HETRT_RETURN_IF_ERROR(r.ExpectMagic(kNDArrayMagic, "NDArray magic"));
  HETRT_RETURN_IF_ERROR(r.ReadU64(&reserved, "NDArray reserved"));
  int32_t device_type = 0, device_id = 0, ndim = 0;
  HETRT_RETURN_IF_ERROR(r.ReadI32(&device_type, "NDArray device_type"));
  HETRT_RETURN_IF_ERROR(r.ReadI32(&device_id, "NDArray device_id"));
  if (device_type != kDLCPU)
    return r.Error("NDArray device_type", "saved arrays must be on cpu (1), found " + std::to_string(device_type));
  HETRT_RETURN_IF_ERROR(r.ReadI32(&ndim, "NDArray ndim"));
  if (ndim < 0 || ndim > kMostDims)
    return r.Error("NDArray ndim", "must be 0.." + std::to_string(kMostDims) + ", found " + std::to_string(ndim));
  NDArrayView view;
  HETRT_RETURN_IF_ERROR(r.ReadU8(&view.dtype.code, "NDArray dtype code"));
  HETRT_RETURN_IF_ERROR(r.ReadU8(&view.dtype.bits, "NDArray dtype bits"));
  HETRT_RETURN_IF_ERROR(r.ReadU16(&view.dtype.lanes, "NDArray dtype lanes"));
  if (view.dtype.code > kLastKnownTypeCode || view.dtype.code == kDLOpaqueHandle)
    return r.Error("NDArray dtype", "unsupported dtype code " + std::to_string(view.dtype.code));
  if (view.dtype.bits == 0 || view.dtype.lanes != 1)
    return r.Error(
        "NDArray dtype",
        "bits must be non-zero and lanes 1 (TVM's size rule ignores lanes, so vector arrays cannot be read safely)");
  view.shape.resize(static_cast<size_t>(ndim));
  for (int64_t& d : view.shape) {
    HETRT_RETURN_IF_ERROR(r.ReadI64(&d, "NDArray shape"));
    if (d < 0) return r.Error("NDArray shape", "negative dimension " + std::to_string(d));
  }
  // TVM's size rule: elements * ceil(bits / 8).
  const std::optional<uint64_t> expected = DenseBytes(view.shape, view.dtype);
  if (!expected || *expected > static_cast<uint64_t>(INT64_MAX))
    return r.Error("NDArray shape", "shape " + ShapeText(view.shape) + " overflows int64");
  int64_t data_bytes = 0;
  HETRT_RETURN_IF_ERROR(r.ReadI64(&data_bytes, "NDArray data_byte_size"));
  if (data_bytes < 0 || static_cast<uint64_t>(data_bytes) != *expected)
    return r.Error("NDArray data_byte_size", std::to_string(data_bytes) + " does not match shape " +
                                                 ShapeText(view.shape) + " of " + DtypeName(view.dtype) + " (" +
                                                 std::to_string(*expected) + " bytes)");
  HETRT_RETURN_IF_ERROR(r.ReadBytes(*expected, &view.bytes, "NDArray data"));
  return view;
}

Result<std::vector<std::string>> ReadParamNames(ByteReader& r, uint64_t count, const std::string& field) {
  std::vector<std::string> names;
  std::unordered_set<std::string> seen;
  for (uint64_t i = 0; i < count; ++i) {
    std::string name;
    HETRT_RETURN_IF_ERROR(r.ReadString(&name, field));
    if (!seen.insert(name).second) return r.Error(field, "duplicate name '" + name + "'");
    names.push_back(std::move(name));
  }
  return names;
}

Result<ParamDictView> ReadParamDictView(ByteReader& r) {
  uint64_t magic = 0, reserved = 0;
  HETRT_RETURN_IF_ERROR(r.ReadU64(&magic, "param dict magic"));
  if (magic != kParamDictMagic)
    return r.Error("param dict magic", "not a TVM param dict (expected 0xF7E58D4F05049CB7)");
  HETRT_RETURN_IF_ERROR(r.ReadU64(&reserved, "param dict reserved"));
  uint64_t name_count = 0;
  HETRT_RETURN_IF_ERROR(r.ReadCount(&name_count, kLeastParamBytes, "param dict name count"));
  ParamDictView dict;
  HETRT_ASSIGN_OR_RETURN(dict.names, ReadParamNames(r, name_count, "param name"));
  uint64_t array_count = 0;
  HETRT_RETURN_IF_ERROR(r.ReadU64(&array_count, "param dict array count"));
  if (array_count != name_count)
    return r.Error("param dict array count",
                   std::to_string(array_count) + " arrays for " + std::to_string(name_count) + " names");
  dict.arrays.reserve(dict.names.size());
  for (const std::string& name : dict.names) {
    HETRT_ASSIGN_OR_RETURN(NDArrayView array, ReadNDArray(r), "param '" + name + "'");
    dict.arrays.push_back(std::move(array));
  }
  if (r.remaining() != 0) return r.Error("param dict", std::to_string(r.remaining()) + " trailing bytes");
  return dict;
}

void WriteNDArray(DLDataType dtype, std::span<const int64_t> shape, std::span<const uint8_t> bytes, ByteWriter& w) {
  w.WriteU64(kNDArrayMagic);
  w.WriteU64(0);
  w.WritePod<int32_t>(kDLCPU);
  w.WritePod<int32_t>(0);
  w.WritePod<int32_t>(static_cast<int32_t>(shape.size()));
  w.WritePod<uint8_t>(dtype.code);
  w.WritePod<uint8_t>(dtype.bits);
  w.WritePod<uint16_t>(dtype.lanes);
  for (int64_t d : shape) w.WritePod<int64_t>(d);
  w.WritePod<int64_t>(static_cast<int64_t>(bytes.size()));
  w.WriteBytes(bytes);
}

}  // namespace hetrt::sdk
