// Byte streams to a micro device. The framed protocol (frame_client.h) runs
// over any of them; each transport only opens, moves bytes, and restarts its
// device where it can:
//   pipe     a device program on this host, over its stdin/stdout
//   serial   a serial port or pty (serial:/dev/ttyUSB0[,115200])
//   tcp      a socket to a board's UART, e.g. an emulator's (tcp:127.0.0.1:4321)
//   qemu     firmware on an emulated board whose UART0 is a socket (qemu_board.h)
#pragma once

#include <memory>
#include <string>

#include "hetrt/base/status.h"

namespace hetrt::micro {

class Transport {
 public:
  virtual ~Transport() = default;
  // "pipe to /tmp/.../device (pid 123)", "tcp 127.0.0.1:4321", ...
  virtual std::string Describe() const = 0;
  // Opens the stream: starts the device program or emulator, or connects.
  // Called again after the stream ended (a restarted device).
  virtual Status Open() = 0;
  virtual void Close() = 0;
  virtual bool IsOpen() const = 0;
  virtual Status Write(const uint8_t* data, size_t n) = 0;
  // Waits up to timeout_ms; returns 0 bytes on timeout, an error once the
  // stream has ended (the device died, the peer closed).
  virtual Result<size_t> Read(uint8_t* data, size_t capacity, int timeout_ms) = 0;
  // For tests: what unplugging the board or a crash does (pipe: SIGKILL;
  // qemu: the monitor's system_reset). UNIMPLEMENTED where there is no way.
  virtual Status ResetDevice() { return Unimplemented(Describe() + " cannot reset its device"); }
};

// A device program on this host, started with its stdin/stdout as the stream;
// `owned_dir` (if any) is removed with the transport.
std::unique_ptr<Transport> MakePipeTransport(const std::string& program, const std::string& owned_dir = "");
// "PATH[,BAUD]" (default 115200): raw 8N1, no flow control.
Result<std::unique_ptr<Transport>> MakeSerialTransport(const std::string& spec);
// "HOST:PORT": a TCP connection (to an emulator's UART socket, a bridge).
Result<std::unique_ptr<Transport>> MakeTcpTransport(const std::string& spec);

// The read/write half every file-descriptor transport shares.
class FdTransport : public Transport {
 public:
  ~FdTransport() override { CloseFds(); }
  bool IsOpen() const override { return read_fd_ >= 0; }
  void Close() override { CloseFds(); }
  Status Write(const uint8_t* data, size_t n) override;
  Result<size_t> Read(uint8_t* data, size_t capacity, int timeout_ms) override;

 protected:
  void CloseFds();
  int read_fd_ = -1, write_fd_ = -1;  // the same descriptor for sockets and ttys
  int nonblocking_fd_ = -1;           // write_fd_ once Write has made it non-blocking
};

}  // namespace hetrt::micro
