// Bounded little-endian readers and writers for TVM's dmlc-style binary streams
// (u64 lengths, no padding). Every read is checked against what is left, so a
// corrupt count can never cause an over-read or a huge allocation. The reads
// are inline, so plugins read their blobs with them (sdk::BlobReader) without
// linking anything; the file helpers and ExpectMagic are in the leaf library
// hetrt::formats (sdk/formats/), which the core and the model-reading plugins link.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hetrt/base/status.h"

namespace hetrt {

// Thread contract (reader and writer): thread-compatible (one thread reads or writes a stream).
class ByteReader {
 public:
  // `source` names the input in error messages ("deploy.so: __tvm_dev_mblob").
  ByteReader(std::span<const uint8_t> data, std::string source) : data_(data), source_(std::move(source)) {}

  size_t offset() const { return pos_; }
  size_t remaining() const { return data_.size() - pos_; }
  const std::string& source() const { return source_; }

  Status ReadU64(uint64_t* out, std::string_view field) { return ReadPod(out, field); }
  Status ReadI64(int64_t* out, std::string_view field) { return ReadPod(out, field); }
  Status ReadU32(uint32_t* out, std::string_view field) { return ReadPod(out, field); }
  Status ReadI32(int32_t* out, std::string_view field) { return ReadPod(out, field); }
  Status ReadU16(uint16_t* out, std::string_view field) { return ReadPod(out, field); }
  Status ReadU8(uint8_t* out, std::string_view field) { return ReadPod(out, field); }
  Status ReadF64(double* out, std::string_view field) { return ReadPod(out, field); }

  // `n` raw bytes, borrowed from the input.
  Status ReadBytes(uint64_t n, std::span<const uint8_t>* out, std::string_view field) {
    if (n > remaining())
      return Error(field,
                   "length " + std::to_string(n) + " exceeds the " + std::to_string(remaining()) + " bytes left");
    *out = data_.subspan(pos_, static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n);
    return OkStatus();
  }
  // What is left, without consuming it.
  std::span<const uint8_t> Rest() const { return data_.subspan(pos_); }
  Status Skip(uint64_t n, std::string_view field) {
    std::span<const uint8_t> unused;
    return ReadBytes(n, &unused, field);
  }
  // u64 length + bytes.
  Status ReadString(std::string* out, std::string_view field) {
    uint64_t n = 0;
    HETRT_RETURN_IF_ERROR(ReadU64(&n, field));
    std::span<const uint8_t> bytes;
    HETRT_RETURN_IF_ERROR(ReadBytes(n, &bytes, field));
    out->assign(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    return OkStatus();
  }
  // A u64 element count, refused when count * min_element_bytes exceeds what is left.
  Status ReadCount(uint64_t* out, uint64_t min_element_bytes, std::string_view field) {
    HETRT_RETURN_IF_ERROR(ReadU64(out, field));
    const uint64_t per = min_element_bytes == 0 ? 1 : min_element_bytes;
    if (*out > remaining() / per)
      return Error(field, "count " + std::to_string(*out) + " cannot fit in the " + std::to_string(remaining()) +
                              " bytes left");
    return OkStatus();
  }

  // For input that is a read-only file mapping (a blob inside a dlopen'ed
  // library): lets ReleaseConsumedPages() drop pages already read, so a large
  // blob is never resident twice (mapping + parsed copy). Never enable it on
  // heap memory: the pages would read back as zeros.
  void EnableReleaseOfConsumedPages() { release_pages_ = true; }
  void ReleaseConsumedPages();

  // DATA_LOSS "<source> at byte <offset>: <field>: <detail>".
  Status Error(std::string_view field, std::string_view detail) const {
    return DataLoss(source_ + " at byte " + std::to_string(pos_) + ": " + std::string(field) + ": " +
                    std::string(detail));
  }
  // Reads a u64 magic number; a different one is an error showing both in hex,
  // followed by `hint` ("not a Relax VM executable").
  Status ExpectMagic(uint64_t expected, std::string_view field, std::string_view hint = {});

  // Any trivially copyable value, little-endian as the host is.
  template <typename T>
  Status ReadPod(T* out, std::string_view field) {
    if (remaining() < sizeof(T))
      return Error(field,
                   "truncated: need " + std::to_string(sizeof(T)) + " bytes, " + std::to_string(remaining()) + " left");
    // Little-endian hosts only (x86-64, AArch64): the format is little-endian.
    std::memcpy(out, data_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return OkStatus();
  }

 private:
  std::span<const uint8_t> data_;
  std::string source_;
  size_t pos_ = 0;
  bool release_pages_ = false;
};

class ByteWriter {
 public:
  template <typename T>
  void WritePod(T value) {
    const auto* p = reinterpret_cast<const uint8_t*>(&value);
    bytes_.insert(bytes_.end(), p, p + sizeof(T));
  }
  void WriteU64(uint64_t v) { WritePod(v); }
  void WriteBytes(std::span<const uint8_t> b) { bytes_.insert(bytes_.end(), b.begin(), b.end()); }
  void WriteString(std::string_view s) {
    WriteU64(s.size());
    bytes_.insert(bytes_.end(), s.begin(), s.end());
  }
  std::vector<uint8_t>& bytes() { return bytes_; }
  std::vector<uint8_t> Take() { return std::move(bytes_); }

 private:
  std::vector<uint8_t> bytes_;
};

// Whole-file helpers with errors that name the path. Reading checks what the
// path is first: a directory is an error, a regular file is read at its size,
// a pipe or device up to `max_bytes`; nothing larger than `max_bytes` is read.
inline constexpr uint64_t kMaxFileBytes = uint64_t{64} << 30;
inline constexpr uint64_t kMaxStreamBytes = uint64_t{1} << 30;
Result<std::vector<uint8_t>> ReadFileBytes(const std::string& path, uint64_t max_bytes = kMaxFileBytes);
Status WriteFileBytes(const std::string& path, std::span<const uint8_t> bytes);

}  // namespace hetrt
