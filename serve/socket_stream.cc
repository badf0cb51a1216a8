#include "socket_stream.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace hetrt::serve {
namespace {

// poll() for `events` on `fd`, restarted when a signal interrupts it.
int PollFor(int fd, short events, std::chrono::milliseconds timeout) {
  pollfd entry{fd, events, 0};
  for (;;) {
    const int ready = ::poll(&entry, 1, static_cast<int>(timeout.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return ready;
    if ((entry.revents & events) != 0) return 1;
    return -1;  // POLLERR, POLLHUP without data, POLLNVAL
  }
}

ssize_t Receive(int fd, char* into, size_t size) {
  ssize_t n;
  do n = ::recv(fd, into, size, 0);
  while (n < 0 && errno == EINTR);
  return n;
}

void IpAndPort(const sockaddr_storage& address, socklen_t length, std::string& ip, int& port) {
  char host[NI_MAXHOST], service[NI_MAXSERV];
  if (::getnameinfo(reinterpret_cast<const sockaddr*>(&address), length, host, sizeof(host), service,
                    sizeof(service), NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return;
  ip = host;
  port = std::atoi(service);
}

}  // namespace

int WaitReadable(int fd, std::chrono::milliseconds timeout, int wake_fd) {
  if (wake_fd < 0) return PollFor(fd, POLLIN, timeout);
  pollfd entries[2] = {{fd, POLLIN, 0}, {wake_fd, POLLIN, 0}};
  for (;;) {
    const int ready = ::poll(entries, 2, static_cast<int>(timeout.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return ready;
    if (entries[1].revents & POLLIN) {
      uint64_t count;
      [[maybe_unused]] ssize_t n = ::read(wake_fd, &count, sizeof(count));
      return 2;
    }
    return (entries[0].revents & POLLIN) != 0 ? 1 : -1;
  }
}

std::string_view SocketStream::PeekHead() {
  constexpr std::string_view kEnd = "\r\n\r\n";
  size_t searched = 0;  // bytes already known not to end the head
  for (;;) {
    const std::string_view seen(buffer_ + begin_, buffered());
    const size_t end = seen.find(kEnd, searched);
    if (end != std::string_view::npos) return seen.substr(0, end + kEnd.size());
    searched = seen.size() >= kEnd.size() - 1 ? seen.size() - (kEnd.size() - 1) : 0;
    if (begin_ > 0) {  // room at the end for what follows
      std::memmove(buffer_, buffer_ + begin_, buffered());
      end_ -= begin_;
      begin_ = 0;
    }
    if (end_ == sizeof(buffer_) || PollFor(fd_, POLLIN, read_timeout_) <= 0) return {};
    const ssize_t n = Receive(fd_, buffer_ + end_, sizeof(buffer_) - end_);
    if (n <= 0) return {};
    end_ += static_cast<size_t>(n);
  }
}

bool SocketStream::ReadFully(char* into, size_t size) {
  while (size > 0) {
    const ssize_t n = read(into, size);
    if (n <= 0) return false;
    into += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool SocketStream::is_readable() const { return buffered() > 0 || PollFor(fd_, POLLIN, read_timeout_) > 0; }

bool SocketStream::is_writable() const { return PollFor(fd_, POLLOUT, write_timeout_) > 0; }

ssize_t SocketStream::read(char* ptr, size_t size) {
  if (buffered() == 0) {
    if (PollFor(fd_, POLLIN, read_timeout_) <= 0) return -1;
    // A large read goes straight to the caller; a small one fills the buffer.
    if (size >= sizeof(buffer_)) return Receive(fd_, ptr, size);
    const ssize_t n = Receive(fd_, buffer_, sizeof(buffer_));
    if (n <= 0) return n;
    begin_ = 0;
    end_ = static_cast<size_t>(n);
  }
  const size_t taken = std::min(size, buffered());
  std::memcpy(ptr, buffer_ + begin_, taken);
  begin_ += taken;
  return static_cast<ssize_t>(taken);
}

ssize_t SocketStream::write(const char* ptr, size_t size) {
  if (PollFor(fd_, POLLOUT, write_timeout_) <= 0) return -1;
  ssize_t n;
  // MSG_NOSIGNAL: a client that hung up gives EPIPE, not a SIGPIPE.
  do n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  return n;
}

void SocketStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  if (::getpeername(fd_, reinterpret_cast<sockaddr*>(&address), &length) == 0) IpAndPort(address, length, ip, port);
}

void SocketStream::get_local_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) == 0) IpAndPort(address, length, ip, port);
}

bool PeerClosed(int fd) {
  if (fd < 0) return false;
  // POLLRDHUP: the peer's end of sending, seen even behind a pipelined
  // request it left unread (a peek would see only those bytes).
  pollfd p{fd, POLLRDHUP, 0};
  int ready;
  do ready = ::poll(&p, 1, 0);
  while (ready < 0 && errno == EINTR);
  return ready < 0 || (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

bool SendAll(int fd, std::string_view data, std::chrono::milliseconds timeout) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return false;
    if (PollFor(fd, POLLOUT, timeout) <= 0) return false;
  }
  return true;
}

}  // namespace hetrt::serve
