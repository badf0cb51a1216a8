// The serial transport: a tty (a USB serial adapter, a pty), raw 8N1.
#include <fcntl.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "transport.h"

namespace hetrt::micro {
namespace {

Result<speed_t> BaudConstant(int baud) {
  switch (baud) {
    case 9600: return B9600;
    case 19200: return B19200;
    case 38400: return B38400;
    case 57600: return B57600;
    case 115200: return B115200;
    case 230400: return B230400;
    case 460800: return B460800;
    case 921600: return B921600;
    default:
      return InvalidArgument("serial: baud rate " + std::to_string(baud) +
                             " is not one of 9600, 19200, 38400, 57600, 115200, 230400, 460800, 921600");
  }
}

class SerialTransport final : public FdTransport {
 public:
  SerialTransport(std::string path, int baud, speed_t speed) : path_(std::move(path)), baud_(baud), speed_(speed) {}
  std::string Describe() const override { return "serial " + path_ + " at " + std::to_string(baud_) + " baud"; }

  Status Open() override {
    Close();
    const int fd = open(path_.c_str(), O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return Unavailable("serial: cannot open " + path_ + ": " + std::strerror(errno));
    termios t{};
    if (tcgetattr(fd, &t) != 0) {
      const std::string why = std::strerror(errno);
      close(fd);
      return FailedPrecondition("serial: " + path_ + " is not a terminal device: " + why);
    }
    cfmakeraw(&t);
    t.c_cflag |= CLOCAL | CREAD;
    t.c_cflag &= ~(CSTOPB | CRTSCTS | PARENB);
    cfsetispeed(&t, speed_);
    cfsetospeed(&t, speed_);
    t.c_cc[VMIN] = 0;
    t.c_cc[VTIME] = 0;
    if (tcsetattr(fd, TCSANOW, &t) != 0) {
      const std::string why = std::strerror(errno);
      close(fd);
      return FailedPrecondition("serial: cannot configure " + path_ + ": " + why);
    }
    tcflush(fd, TCIOFLUSH);
    read_fd_ = write_fd_ = fd;
    return OkStatus();
  }

 private:
  std::string path_;
  int baud_;
  speed_t speed_;
};

}  // namespace

Result<std::unique_ptr<Transport>> MakeSerialTransport(const std::string& spec) {
  const size_t comma = spec.find(',');
  const std::string path = spec.substr(0, comma);
  int baud = 115200;
  if (comma != std::string::npos) {
    const std::string text = spec.substr(comma + 1);
    char* end = nullptr;
    const long value = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || value <= 0 || value > 4000000)
      return InvalidArgument("serial: '" + text + "' is not a baud rate (serial:PATH[,BAUD])");
    baud = static_cast<int>(value);
  }
  if (path.empty()) return InvalidArgument("serial: no device path (serial:PATH[,BAUD], e.g. serial:/dev/ttyACM0)");
  HETRT_ASSIGN_OR_RETURN(speed_t speed, BaudConstant(baud));
  return std::unique_ptr<Transport>(std::make_unique<SerialTransport>(path, baud, speed));
}

}  // namespace hetrt::micro
