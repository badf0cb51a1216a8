// httplib's Stream over one accepted socket, kept by hetrt rather than httplib
// so that a connection can be served in pieces: a request on a worker, the
// wait for the next one parked in an epoll set (http_server.h). Reads go
// through a small read-ahead buffer (httplib parses a request a byte at a
// time); every read and write waits at most its timeout for the socket.
#pragma once

#include <httplib.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

namespace hetrt::serve {

class SocketStream final : public httplib::Stream {
 public:
  SocketStream(int fd, std::chrono::milliseconds read_timeout, std::chrono::milliseconds write_timeout)
      : fd_(fd), read_timeout_(read_timeout), write_timeout_(write_timeout) {}

  bool is_readable() const override;
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  using httplib::Stream::write;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  socket_t socket() const override { return fd_; }

  // Bytes received that no request has consumed yet (a pipelined request).
  size_t buffered() const { return end_ - begin_; }

  // The head of the next request (through its empty line), read into the
  // buffer but not consumed; "" when it does not fit in the buffer or the
  // connection ended or timed out first. The view lives until the next read.
  std::string_view PeekHead();
  void Consume(size_t bytes) { begin_ += std::min(bytes, buffered()); }
  // Exactly `size` bytes into `into`; false when the connection ended or
  // made no progress for the read timeout first.
  bool ReadFully(char* into, size_t size);

 private:
  const int fd_;
  const std::chrono::milliseconds read_timeout_, write_timeout_;
  char buffer_[4096];
  size_t begin_ = 0, end_ = 0;
};

// Waits up to `timeout` for `fd` to be readable (data or end of stream): 1
// readable, 0 not within the timeout, -1 an error or a hang-up; with a
// `wake_fd` (an eventfd), 2 when that was signalled (and is then drained).
int WaitReadable(int fd, std::chrono::milliseconds timeout, int wake_fd = -1);

// Whether the peer of `fd` closed, reset or half-closed it (as the generation
// relay: a client that stopped sending is gone). Never blocks, reads nothing
// (a pipelined next request stays where it is).
bool PeerClosed(int fd);

// Sends all of `data`, waiting at most `timeout` for each bit of progress;
// false when the connection failed or stalled.
bool SendAll(int fd, std::string_view data, std::chrono::milliseconds timeout);

}  // namespace hetrt::serve
