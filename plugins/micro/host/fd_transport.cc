#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "transport.h"

namespace hetrt::micro {

void FdTransport::CloseFds() {
  if (write_fd_ >= 0 && write_fd_ != read_fd_) close(write_fd_);
  if (read_fd_ >= 0) close(read_fd_);
  read_fd_ = write_fd_ = nonblocking_fd_ = -1;
}

Status FdTransport::Write(const uint8_t* data, size_t n) {
  // The 5 s bound below needs a non-blocking descriptor: on a blocking one
  // (QEMU's UART socket, TCP, a pipe) write() itself would wait for a device
  // that stopped reading, without end.
  if (write_fd_ >= 0 && nonblocking_fd_ != write_fd_) {
    const int flags = fcntl(write_fd_, F_GETFL);
    if (flags >= 0 && (flags & O_NONBLOCK) == 0) fcntl(write_fd_, F_SETFL, flags | O_NONBLOCK);
    nonblocking_fd_ = write_fd_;
  }
  while (n > 0) {
    const ssize_t w = write(write_fd_, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{write_fd_, POLLOUT, 0};
      if (poll(&p, 1, 5000) <= 0) return Unavailable(Describe() + ": the device does not take bytes (5 s)");
      continue;
    }
    if (w <= 0) return Unavailable(Describe() + ": write failed: " + std::strerror(errno));
    data += w;
    n -= static_cast<size_t>(w);
  }
  return OkStatus();
}

Result<size_t> FdTransport::Read(uint8_t* data, size_t capacity, int timeout_ms) {
  pollfd p{read_fd_, POLLIN, 0};
  int ready;
  do ready = poll(&p, 1, timeout_ms);
  while (ready < 0 && errno == EINTR);
  if (ready < 0) return Unavailable(Describe() + ": poll failed: " + std::strerror(errno));
  if (ready == 0) return size_t{0};
  const ssize_t n = read(read_fd_, data, capacity);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return size_t{0};
  if (n <= 0)
    return Unavailable(Describe() + ": the stream ended" + (n < 0 ? std::string(": ") + std::strerror(errno) : ""));
  return static_cast<size_t>(n);
}

}  // namespace hetrt::micro
