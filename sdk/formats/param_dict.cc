#include "hetrt/sdk/param_dict.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "hetrt/sdk/tensor_layout.h"

namespace hetrt::sdk {
namespace {

constexpr uint64_t kDictMagic = 0xF7E58D4F05049CB7ULL;
constexpr uint64_t kArrayMagic = 0xDD5E40F096B4A13FULL;
constexpr uint32_t kMostDims = 64;
// The least a named array takes in the file (name length + array header):
// bounds counts before anything is allocated for them.
constexpr uint64_t kLeastEntryBytes = 8 + 40;

// Little-endian fields off the front of the file, each failure naming its field.
class Cursor {
 public:
  Cursor(std::span<const uint8_t> bytes, const std::string& source) : rest_(bytes), source_(source) {}

  template <typename T>
  Status Take(T* out, const char* field) {
    if (rest_.size() < sizeof(T)) return Truncated(field);
    std::memcpy(out, rest_.data(), sizeof(T));
    rest_ = rest_.subspan(sizeof(T));
    return OkStatus();
  }
  Status TakeBytes(uint64_t n, std::span<const uint8_t>* out, const char* field) {
    if (rest_.size() < n) return Truncated(field);
    *out = rest_.first(static_cast<size_t>(n));
    rest_ = rest_.subspan(static_cast<size_t>(n));
    return OkStatus();
  }
  uint64_t left() const { return rest_.size(); }
  Status Corrupt(const char* field, const std::string& why) const {
    return DataLoss(source_ + ": " + field + ": " + why);
  }

 private:
  Status Truncated(const char* field) const { return Corrupt(field, "the file ends inside it"); }
  std::span<const uint8_t> rest_;
  const std::string& source_;
};

Status ReadArray(Cursor& in, ParamEntry* entry) {
  uint64_t magic = 0, reserved = 0;
  HETRT_RETURN_IF_ERROR(in.Take(&magic, "array magic"));
  if (magic != kArrayMagic) return in.Corrupt("array magic", "not an NDArray");
  HETRT_RETURN_IF_ERROR(in.Take(&reserved, "array reserved"));
  int32_t device[2] = {0, 0};
  uint32_t ndim = 0;
  HETRT_RETURN_IF_ERROR(in.Take(&device, "array device"));
  if (device[0] != kDLCPU)
    return in.Corrupt("array device", "saved arrays are on cpu (1), this on " + std::to_string(device[0]));
  HETRT_RETURN_IF_ERROR(in.Take(&ndim, "array ndim"));
  if (ndim > kMostDims) return in.Corrupt("array ndim", std::to_string(ndim) + " dimensions");
  HETRT_RETURN_IF_ERROR(in.Take(&entry->dtype.code, "array dtype"));
  HETRT_RETURN_IF_ERROR(in.Take(&entry->dtype.bits, "array dtype"));
  HETRT_RETURN_IF_ERROR(in.Take(&entry->dtype.lanes, "array dtype"));
  if (entry->dtype.bits == 0 || entry->dtype.lanes != 1 || entry->dtype.code > kDLBfloat)
    return in.Corrupt("array dtype", "unsupported " + DtypeName(entry->dtype));
  entry->shape.resize(ndim);
  for (int64_t& dim : entry->shape) HETRT_RETURN_IF_ERROR(in.Take(&dim, "array shape"));
  const auto expected = DenseBytes(entry->shape, entry->dtype);
  if (!expected) return in.Corrupt("array shape", "a negative or oversized dimension");
  int64_t size = 0;
  HETRT_RETURN_IF_ERROR(in.Take(&size, "array data size"));
  if (size < 0 || static_cast<uint64_t>(size) != *expected)
    return in.Corrupt("array data size",
                      std::to_string(size) + " bytes where the shape makes " + std::to_string(*expected));
  std::span<const uint8_t> data;
  HETRT_RETURN_IF_ERROR(in.TakeBytes(*expected, &data, "array data"));
  entry->bytes.assign(data.begin(), data.end());
  return OkStatus();
}

}  // namespace

Result<std::vector<ParamEntry>> ReadParamDict(std::span<const uint8_t> file, const std::string& source) {
  Cursor in(file, source);
  uint64_t magic = 0, reserved = 0, names = 0, arrays = 0;
  HETRT_RETURN_IF_ERROR(in.Take(&magic, "param dict magic"));
  if (magic != kDictMagic) return in.Corrupt("param dict magic", "not a TVM param dict");
  HETRT_RETURN_IF_ERROR(in.Take(&reserved, "param dict reserved"));
  HETRT_RETURN_IF_ERROR(in.Take(&names, "name count"));
  if (names > in.left() / kLeastEntryBytes)
    return in.Corrupt("name count", std::to_string(names) + " names cannot fit");
  std::vector<ParamEntry> params(static_cast<size_t>(names));
  for (ParamEntry& p : params) {
    uint64_t length = 0;
    std::span<const uint8_t> text;
    HETRT_RETURN_IF_ERROR(in.Take(&length, "name length"));
    HETRT_RETURN_IF_ERROR(in.TakeBytes(length, &text, "name"));
    p.name.assign(text.begin(), text.end());
    if (FindParamEntry(params, p.name) != &p) return in.Corrupt("name", "'" + p.name + "' appears twice");
  }
  HETRT_RETURN_IF_ERROR(in.Take(&arrays, "array count"));
  if (arrays != names)
    return in.Corrupt("array count", std::to_string(arrays) + " arrays for " + std::to_string(names) + " names");
  for (ParamEntry& p : params) HETRT_RETURN_IF_ERROR(ReadArray(in, &p));
  return params;
}

Result<std::vector<ParamEntry>> ReadParamDictFile(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return InvalidArgument(path + " is a directory, not a param dict");
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) return NotFound("cannot open param dict '" + path + "': " + std::strerror(errno));
  std::vector<uint8_t> bytes;
  uint8_t chunk[1 << 16];
  while (size_t n = std::fread(chunk, 1, sizeof chunk, file.get())) bytes.insert(bytes.end(), chunk, chunk + n);
  if (std::ferror(file.get())) return DataLoss("reading " + path + ": " + std::strerror(errno));
  return ReadParamDict(bytes, path);
}

const ParamEntry* FindParamEntry(const std::vector<ParamEntry>& params, std::string_view name) {
  for (const ParamEntry& p : params)
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace hetrt::sdk
