#include "hetrt/formats/params.h"

#include <cstring>

#include "hetrt/base/dtype.h"
#include "hetrt/sdk/ndarray_format.h"

// The layouts are read and written by the one reader below the core and the
// plugins (hetrt/sdk/ndarray_format.h); here arrays become host Tensors.
namespace hetrt {
namespace {

Result<Tensor> ToTensor(const sdk::NDArrayView& array) {
  HETRT_ASSIGN_OR_RETURN(Tensor t, Tensor::EmptyHost(array.shape, array.dtype));
  if (!array.bytes.empty()) std::memcpy(t.data(), array.bytes.data(), array.bytes.size());
  return t;
}

}  // namespace

Result<Tensor> ReadNDArray(ByteReader& r) {
  HETRT_ASSIGN_OR_RETURN(sdk::NDArrayView array, sdk::ReadNDArray(r));
  return ToTensor(array);
}

Status WriteNDArray(const Tensor& t, ByteWriter& w) {
  if (t.device().device_type != kDLCPU)
    return InvalidArgument("WriteNDArray needs a host tensor, got one on " + DeviceToString(t.device()));
  const uint64_t nbytes = static_cast<uint64_t>(t.num_elements()) * ((t.dtype().bits + 7u) / 8u);
  sdk::WriteNDArray(t.dtype(), t.shape(), {static_cast<const uint8_t*>(t.data()), static_cast<size_t>(nbytes)}, w);
  return OkStatus();
}

Result<std::vector<NamedTensor>> ReadParamNames(ByteReader& r, uint64_t count, const std::string& field) {
  HETRT_ASSIGN_OR_RETURN(std::vector<std::string> names, sdk::ReadParamNames(r, count, field));
  std::vector<NamedTensor> params(names.size());
  for (size_t i = 0; i < names.size(); ++i) params[i].name = std::move(names[i]);
  return params;
}

Result<std::vector<NamedTensor>> ReadParamDict(std::span<const uint8_t> bytes, const std::string& source) {
  ByteReader r(bytes, source);
  HETRT_ASSIGN_OR_RETURN(sdk::ParamDictView dict, sdk::ReadParamDictView(r));
  std::vector<NamedTensor> params(dict.names.size());
  for (size_t i = 0; i < params.size(); ++i) {
    params[i].name = std::move(dict.names[i]);
    HETRT_ASSIGN_OR_RETURN(params[i].tensor, ToTensor(dict.arrays[i]), "param '" + params[i].name + "'");
  }
  return params;
}

Result<std::vector<NamedTensor>> LoadParamDictFile(const std::string& path) {
  HETRT_ASSIGN_OR_RETURN(auto bytes, ReadFileBytes(path));
  return ReadParamDict(bytes, path);
}

Result<std::vector<uint8_t>> WriteParamDict(const std::vector<NamedTensor>& params) {
  ByteWriter w;
  w.WriteU64(sdk::kParamDictMagic);
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
