// The tcp transport: a connection to a board's UART exposed as a socket
// (QEMU's -serial tcp::PORT,server=on, a serial-to-TCP bridge).
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "transport.h"

namespace hetrt::micro {
namespace {

class TcpTransport final : public FdTransport {
 public:
  TcpTransport(std::string host, std::string port) : host_(std::move(host)), port_(std::move(port)) {}
  std::string Describe() const override { return "tcp " + host_ + ":" + port_; }

  Status Open() override {
    Close();
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (const int rc = getaddrinfo(host_.c_str(), port_.c_str(), &hints, &found); rc != 0)
      return Unavailable("tcp: cannot resolve " + host_ + ": " + gai_strerror(rc));
    std::string why = "no address";
    for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
      const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) continue;
      if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
        const int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        read_fd_ = write_fd_ = fd;
        break;
      }
      why = std::strerror(errno);
      close(fd);
    }
    freeaddrinfo(found);
    if (read_fd_ < 0) return Unavailable("tcp: cannot connect to " + host_ + ":" + port_ + ": " + why);
    return OkStatus();
  }

 private:
  std::string host_, port_;
};

}  // namespace

Result<std::unique_ptr<Transport>> MakeTcpTransport(const std::string& spec) {
  const size_t colon = spec.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == spec.size())
    return InvalidArgument("tcp: '" + spec + "' is not HOST:PORT (e.g. tcp:127.0.0.1:4321)");
  const std::string port = spec.substr(colon + 1);
  if (port.find_first_not_of("0123456789") != std::string::npos || port.size() > 5 || std::stoi(port) > 65535)
    return InvalidArgument("tcp: '" + port + "' is not a port number");
  return std::unique_ptr<Transport>(std::make_unique<TcpTransport>(spec.substr(0, colon), port));
}

}  // namespace hetrt::micro
