#include "hetrt/formats/params.h"

#include <cstring>
#include <unordered_set>

#include "hetrt/base/dtype.h"

namespace hetrt {
namespace {
constexpr int32_t kMaxNDim = 64;  // far above any real model; bounds the shape read
}

Result<Tensor> ReadNDArray(ByteReader& r) {
  uint64_t reserved = 0;
  HETRT_RETURN_IF_ERROR(r.ExpectMagic(kNDArrayMagic, "NDArray magic"));
  HETRT_RETURN_IF_ERROR(r.ReadU64(&reserved, "NDArray reserved"));
  int32_t device_type = 0, device_id = 0, ndim = 0;
  HETRT_RETURN_IF_ERROR(r.ReadI32(&device_type, "NDArray device_type"));
  HETRT_RETURN_IF_ERROR(r.ReadI32(&device_id, "NDArray device_id"));
  if (device_type != kDLCPU)
    return r.Error("NDArray device_type", "saved arrays must be on cpu (1), found " + std::to_string(device_type));
  HETRT_RETURN_IF_ERROR(r.ReadI32(&ndim, "NDArray ndim"));
  if (ndim < 0 || ndim > kMaxNDim)
    return r.Error("NDArray ndim", "must be 0.." + std::to_string(kMaxNDim) + ", found " + std::to_string(ndim));
  DLDataType dtype{};
  HETRT_RETURN_IF_ERROR(r.ReadU8(&dtype.code, "NDArray dtype code"));
  HETRT_RETURN_IF_ERROR(r.ReadU8(&dtype.bits, "NDArray dtype bits"));
  HETRT_RETURN_IF_ERROR(r.ReadU16(&dtype.lanes, "NDArray dtype lanes"));
  if (!IsKnownDataTypeCode(dtype.code) || dtype.code == kDLOpaqueHandle)
    return r.Error("NDArray dtype", "unsupported dtype code " + std::to_string(dtype.code));
  if (dtype.bits == 0 || dtype.lanes != 1)
    return r.Error(
        "NDArray dtype",
        "bits must be non-zero and lanes 1 (TVM's size rule ignores lanes, so vector arrays cannot be read safely)");
  std::vector<int64_t> shape(static_cast<size_t>(ndim));
  for (int64_t& d : shape) {
    HETRT_RETURN_IF_ERROR(r.ReadI64(&d, "NDArray shape"));
    if (d < 0) return r.Error("NDArray shape", "negative dimension " + std::to_string(d));
  }
  auto count = ShapeNumElements(shape);
  if (!count.ok()) return r.Error("NDArray shape", count.status().message());
  int64_t data_bytes = 0;
  HETRT_RETURN_IF_ERROR(r.ReadI64(&data_bytes, "NDArray data_byte_size"));
  // TVM's size rule ignores lanes: numel * ceil(bits / 8).
  const uint64_t elem_bytes = (dtype.bits + 7u) / 8u;
  const uint64_t expected = static_cast<uint64_t>(*count) * elem_bytes;
  if (data_bytes < 0 || static_cast<uint64_t>(data_bytes) != expected)
    return r.Error("NDArray data_byte_size", std::to_string(data_bytes) + " does not match shape " +
                                                 ShapeToString(shape) + " of " + DataTypeToString(dtype) + " (" +
                                                 std::to_string(expected) + " bytes)");
  std::span<const uint8_t> payload;
  HETRT_RETURN_IF_ERROR(r.ReadBytes(expected, &payload, "NDArray data"));
  HETRT_ASSIGN_OR_RETURN(Tensor t, Tensor::EmptyHost(std::move(shape), dtype));
  if (!payload.empty()) std::memcpy(t.data(), payload.data(), payload.size());
  return t;
}

Status WriteNDArray(const Tensor& t, ByteWriter& w) {
  if (t.device().device_type != kDLCPU)
    return InvalidArgument("WriteNDArray needs a host tensor, got one on " + DeviceToString(t.device()));
  w.WriteU64(kNDArrayMagic);
  w.WriteU64(0);
  w.WritePod<int32_t>(kDLCPU);
  w.WritePod<int32_t>(0);
  w.WritePod<int32_t>(static_cast<int32_t>(t.shape().size()));
  w.WritePod<uint8_t>(t.dtype().code);
  w.WritePod<uint8_t>(t.dtype().bits);
  w.WritePod<uint16_t>(t.dtype().lanes);
  for (int64_t d : t.shape()) w.WritePod<int64_t>(d);
  const uint64_t nbytes = static_cast<uint64_t>(t.num_elements()) * ((t.dtype().bits + 7u) / 8u);
  w.WritePod<int64_t>(static_cast<int64_t>(nbytes));
  w.WriteBytes({static_cast<const uint8_t*>(t.data()), static_cast<size_t>(nbytes)});
  return OkStatus();
}

Result<std::vector<NamedTensor>> ReadParamNames(ByteReader& r, uint64_t count, const std::string& field) {
  std::vector<NamedTensor> params;
  std::unordered_set<std::string> seen;
  for (uint64_t i = 0; i < count; ++i) {
    NamedTensor p;
    HETRT_RETURN_IF_ERROR(r.ReadString(&p.name, field));
    if (!seen.insert(p.name).second) return r.Error(field, "duplicate name '" + p.name + "'");
    params.push_back(std::move(p));
  }
  return params;
}

Result<std::vector<NamedTensor>> ReadParamDict(std::span<const uint8_t> bytes, const std::string& source) {
  ByteReader r(bytes, source);
  uint64_t magic = 0, reserved = 0;
  HETRT_RETURN_IF_ERROR(r.ReadU64(&magic, "param dict magic"));
  if (magic != kParamDictMagic)
    return r.Error("param dict magic", "not a TVM param dict (expected 0xF7E58D4F05049CB7)");
  HETRT_RETURN_IF_ERROR(r.ReadU64(&reserved, "param dict reserved"));
  uint64_t name_count = 0;
  HETRT_RETURN_IF_ERROR(r.ReadCount(&name_count, kMinParamBytes, "param dict name count"));
  HETRT_ASSIGN_OR_RETURN(std::vector<NamedTensor> params, ReadParamNames(r, name_count, "param name"));
  uint64_t array_count = 0;
  HETRT_RETURN_IF_ERROR(r.ReadU64(&array_count, "param dict array count"));
  if (array_count != name_count)
    return r.Error("param dict array count",
                   std::to_string(array_count) + " arrays for " + std::to_string(name_count) + " names");
  for (auto& p : params) {
    HETRT_ASSIGN_OR_RETURN(p.tensor, ReadNDArray(r), "param '" + p.name + "'");
  }
  if (r.remaining() != 0) return r.Error("param dict", std::to_string(r.remaining()) + " trailing bytes");
  return params;
}

Result<std::vector<NamedTensor>> LoadParamDictFile(const std::string& path) {
  HETRT_ASSIGN_OR_RETURN(auto bytes, ReadFileBytes(path));
  return ReadParamDict(bytes, path);
}

Result<std::vector<uint8_t>> WriteParamDict(const std::vector<NamedTensor>& params) {
  ByteWriter w;
  w.WriteU64(kParamDictMagic);
  w.WriteU64(0);
  w.WriteU64(params.size());
  for (const auto& p : params) w.WriteString(p.name);
  w.WriteU64(params.size());
  for (const auto& p : params) {
    HETRT_RETURN_IF_ERROR(WriteNDArray(p.tensor, w), "param '" + p.name + "'");
  }
  return w.Take();
}

const NamedTensor* FindParam(const std::vector<NamedTensor>& params, std::string_view name) {
  for (const auto& p : params)
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace hetrt
