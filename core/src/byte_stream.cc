#include "hetrt/byte_stream.h"

#include <cerrno>
#include <cstdio>
#include <fstream>

#include <sys/mman.h>
#include <unistd.h>

namespace hetrt {

Status ByteReader::ReadBytes(uint64_t n, std::span<const uint8_t>* out, std::string_view field) {
  if (n > remaining())
    return Error(field, "length " + std::to_string(n) + " exceeds the " +
                            std::to_string(remaining()) + " bytes left");
  *out = data_.subspan(pos_, static_cast<size_t>(n));
  pos_ += static_cast<size_t>(n);
  return OkStatus();
}

Status ByteReader::ReadString(std::string* out, std::string_view field) {
  uint64_t n = 0;
  HETRT_RETURN_IF_ERROR(ReadU64(&n, field));
  std::span<const uint8_t> bytes;
  HETRT_RETURN_IF_ERROR(ReadBytes(n, &bytes, field));
  out->assign(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  return OkStatus();
}

Status ByteReader::ReadCount(uint64_t* out, uint64_t min_element_bytes, std::string_view field) {
  HETRT_RETURN_IF_ERROR(ReadU64(out, field));
  const uint64_t per = min_element_bytes == 0 ? 1 : min_element_bytes;
  if (*out > remaining() / per)
    return Error(field, "count " + std::to_string(*out) + " cannot fit in the " +
                            std::to_string(remaining()) + " bytes left");
  return OkStatus();
}

void ByteReader::ReleaseConsumedPages() {
  if (!release_pages_) return;
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t start = reinterpret_cast<uintptr_t>(data_.data());
  const uintptr_t begin = (start + page - 1) & ~(page - 1);
  const uintptr_t end = (start + pos_) & ~(page - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

Status ByteReader::Error(std::string_view field, std::string_view detail) const {
  return DataLoss(source_ + " at byte " + std::to_string(pos_) + ": " + std::string(field) + ": " +
                  std::string(detail));
}

Result<std::vector<uint8_t>> ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return NotFound("cannot open '" + path + "': " + std::strerror(errno));
  const std::streamsize size = in.tellg();
  if (size < 0) return DataLoss("cannot read the size of '" + path + "'");
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  in.seekg(0);
  if (size > 0 && !in.read(reinterpret_cast<char*>(bytes.data()), size))
    return DataLoss("short read from '" + path + "'");
  return bytes;
}

Status WriteFileBytes(const std::string& path, std::span<const uint8_t> bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return InvalidArgument("cannot write '" + path + "': " + std::strerror(errno));
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) return DataLoss("short write to '" + path + "'");
  return OkStatus();
}

}  // namespace hetrt
