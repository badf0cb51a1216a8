#include "hetrt/formats/npy.h"

#include <cstring>

#include "hetrt/sdk/byte_stream.h"
#include "hetrt/base/dtype.h"

namespace hetrt {
namespace {

// The value of 'key' in the header dict, up to the matching delimiter.
bool FindHeaderValue(const std::string& header, const std::string& key, std::string* out) {
  const auto k = header.find("'" + key + "'");
  if (k == std::string::npos) return false;
  auto colon = header.find(':', k);
  if (colon == std::string::npos) return false;
  auto begin = header.find_first_not_of(' ', colon + 1);
  if (begin == std::string::npos) return false;
  size_t end;
  if (header[begin] == '(') {
    end = header.find(')', begin);
    if (end == std::string::npos) return false;
    ++end;
  } else if (header[begin] == '\'') {
    end = header.find('\'', begin + 1);
    if (end == std::string::npos) return false;
    ++end;
  } else {
    end = header.find_first_of(",}", begin);
    if (end == std::string::npos) return false;
  }
  *out = header.substr(begin, end - begin);
  return true;
}

Result<DLDataType> DescrToDataType(const std::string& descr) {
  // '<f4', '|u1', '<i8', '|b1', ...
  if (descr.size() < 5 || descr.front() != '\'' || descr.back() != '\'') return InvalidArgument("bad descr " + descr);
  const char order = descr[1];
  const char kind = descr[2];
  const int bytes = std::atoi(descr.substr(3, descr.size() - 4).c_str());
  if (order == '>') return Unimplemented("big-endian arrays are not supported (descr " + descr + ")");
  if (bytes <= 0 || bytes > 16) return InvalidArgument("bad element size in descr " + descr);
  const uint8_t bits = static_cast<uint8_t>(bytes * 8);
  switch (kind) {
    case 'f': return DLDataType{kDLFloat, bits, 1};
    case 'i': return DLDataType{kDLInt, bits, 1};
    case 'u': return DLDataType{kDLUInt, bits, 1};
    case 'b': return DLDataType{kDLUInt, 1, 1};  // numpy bool: one byte per element
    default: return Unimplemented("unsupported numpy dtype " + descr);
  }
}

}  // namespace

Result<Tensor> ReadNpy(std::span<const uint8_t> bytes, const std::string& source) {
  ByteReader r(bytes, source);
  std::span<const uint8_t> magic;
  HETRT_RETURN_IF_ERROR(r.ReadBytes(6, &magic, "npy magic"));
  if (std::memcmp(magic.data(), "\x93NUMPY", 6) != 0) return r.Error("npy magic", "not a .npy file");
  uint8_t major = 0, minor = 0;
  HETRT_RETURN_IF_ERROR(r.ReadU8(&major, "npy version"));
  HETRT_RETURN_IF_ERROR(r.ReadU8(&minor, "npy version"));
  uint32_t header_len = 0;
  if (major == 1) {
    uint16_t len16 = 0;
    HETRT_RETURN_IF_ERROR(r.ReadU16(&len16, "npy header length"));
    header_len = len16;
  } else if (major == 2 || major == 3) {
    HETRT_RETURN_IF_ERROR(r.ReadU32(&header_len, "npy header length"));
  } else {
    return r.Error("npy version", "unsupported version " + std::to_string(major));
  }
  std::span<const uint8_t> header_bytes;
  HETRT_RETURN_IF_ERROR(r.ReadBytes(header_len, &header_bytes, "npy header"));
  const std::string header(header_bytes.begin(), header_bytes.end());
  std::string descr, fortran, shape_text;
  if (!FindHeaderValue(header, "descr", &descr) || !FindHeaderValue(header, "fortran_order", &fortran) ||
      !FindHeaderValue(header, "shape", &shape_text))
    return r.Error("npy header", "needs descr, fortran_order and shape");
  if (fortran != "False") return r.Error("npy header", "Fortran-order arrays are not supported");
  auto dtype = DescrToDataType(descr);
  if (!dtype.ok()) return dtype.status().WithContext(source);
  if (shape_text.size() < 2 || shape_text.front() != '(' || shape_text.back() != ')')
    return r.Error("npy header", "shape must be a tuple, got " + shape_text);
  std::vector<int64_t> shape;
  for (size_t i = 1; i + 1 < shape_text.size();) {
    while (i + 1 < shape_text.size() && (shape_text[i] == ' ' || shape_text[i] == ',')) ++i;
    if (i + 1 >= shape_text.size()) break;
    size_t end = i;
    while (end < shape_text.size() && std::isdigit(static_cast<unsigned char>(shape_text[end]))) ++end;
    if (end == i || end - i > 15) return r.Error("npy header", "bad shape " + shape_text);
    shape.push_back(std::stoll(shape_text.substr(i, end - i)));
    i = end;
  }
  // Check the data is really there before allocating for the declared shape.
  auto count = ShapeNumElements(shape);
  if (!count.ok()) return r.Error("npy header", count.status().message());
  const uint64_t elem = DataTypeBytes(*dtype);
  if (static_cast<uint64_t>(*count) > r.remaining() / elem)
    return r.Error("npy data", "shape " + ShapeToString(shape) + " needs more bytes than the " +
                                   std::to_string(r.remaining()) + " left");
  std::span<const uint8_t> data;
  HETRT_RETURN_IF_ERROR(r.ReadBytes(static_cast<uint64_t>(*count) * elem, &data, "npy data"));
  HETRT_ASSIGN_OR_RETURN(Tensor t, Tensor::EmptyHost(shape, *dtype));
  if (!data.empty()) std::memcpy(t.data(), data.data(), data.size());
  return t;
}

Result<Tensor> LoadNpyFile(const std::string& path) {
  HETRT_ASSIGN_OR_RETURN(auto bytes, ReadFileBytes(path));
  return ReadNpy(bytes, path);
}

}  // namespace hetrt
