#include "hetrt/sdk/byte_stream.h"

#include <cerrno>
#include <cstdio>
#include <fstream>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace hetrt {

void ByteReader::ReleaseConsumedPages() {
  if (!release_pages_) return;
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t start = reinterpret_cast<uintptr_t>(data_.data());
  const uintptr_t begin = (start + page - 1) & ~(page - 1);
  const uintptr_t end = (start + pos_) & ~(page - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

Status ByteReader::ExpectMagic(uint64_t expected, std::string_view field, std::string_view hint) {
  uint64_t found = 0;
  HETRT_RETURN_IF_ERROR(ReadU64(&found, field));
  if (found == expected) return OkStatus();
  char buf[64];
  std::snprintf(buf, sizeof buf, "expected 0x%016llX, found 0x%016llX", static_cast<unsigned long long>(expected),
                static_cast<unsigned long long>(found));
  return Error(field, std::string(buf) + (hint.empty() ? "" : " (" + std::string(hint) + ")"));
}

Result<std::vector<uint8_t>> ReadFileBytes(const std::string& path, uint64_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    return (err == ENOENT ? NotFound("'" + path + "' does not exist")
                          : InvalidArgument("cannot open '" + path + "': " + std::strerror(err)));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0) return InvalidArgument("cannot stat '" + path + "': " + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) return InvalidArgument("'" + path + "' is a directory; a file was expected");
  const bool regular = S_ISREG(st.st_mode);
  if (regular && static_cast<uint64_t>(st.st_size) > max_bytes)
    return ResourceExhausted("'" + path + "' is " + std::to_string(st.st_size) + " bytes; at most " +
                             std::to_string(max_bytes) + " are read");
  // A stream (pipe, /dev/zero) has no size to check first: a lower bound keeps
  // an endless one from filling memory.
  if (!regular) max_bytes = std::min<uint64_t>(max_bytes, kMaxStreamBytes);
  std::vector<uint8_t> bytes;
  try {
    // A regular file's size is known; a pipe or device is read in chunks up to the bound.
    bytes.resize(regular ? static_cast<size_t>(st.st_size) : size_t{1} << 16);
    size_t used = 0;
    for (;;) {
      if (used == bytes.size()) {
        if (regular) break;
        if (bytes.size() >= max_bytes)
          return ResourceExhausted("'" + path + "' holds more than " + std::to_string(max_bytes) + " bytes");
        bytes.resize(static_cast<size_t>(std::min<uint64_t>(max_bytes, 2 * bytes.size())));
      }
      const ssize_t n = ::read(fd, bytes.data() + used, bytes.size() - used);
      if (n < 0) {
        if (errno == EINTR) continue;
        return DataLoss("reading '" + path + "' failed: " + std::strerror(errno));
      }
      if (n == 0) break;
      used += static_cast<size_t>(n);
    }
    if (regular && used != bytes.size())
      return DataLoss("short read from '" + path + "': " + std::to_string(used) + " of " +
                      std::to_string(bytes.size()) + " bytes (did it change while being read?)");
    bytes.resize(used);
  } catch (const std::bad_alloc&) {
    return ResourceExhausted("out of memory reading '" + path + "'");
  }
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
