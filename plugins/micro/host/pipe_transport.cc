// The pipe transport: a device program on this host, its stdin/stdout the stream.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "transport.h"

namespace hetrt::micro {
namespace {

class PipeTransport final : public FdTransport {
 public:
  PipeTransport(std::string program, std::string owned_dir)
      : program_(std::move(program)), owned_dir_(std::move(owned_dir)) {}
  ~PipeTransport() override {
    Close();
    std::error_code ec;
    if (!owned_dir_.empty()) std::filesystem::remove_all(owned_dir_, ec);
  }

  std::string Describe() const override {
    return "pipe to " + program_ + (pid_ > 0 ? " (pid " + std::to_string(pid_) + ")" : "");
  }

  Status Open() override {
    Close();
    signal(SIGPIPE, SIG_IGN);  // a device that died must show up as an error, not kill the host
    int to[2], from[2];
    if (pipe(to) != 0) return Unavailable("micro: cannot create pipes");
    if (pipe(from) != 0) {
      close(to[0]), close(to[1]);
      return Unavailable("micro: cannot create pipes");
    }
    const pid_t pid = fork();
    if (pid < 0) {
      close(to[0]), close(to[1]), close(from[0]), close(from[1]);
      return Unavailable("micro: cannot start " + program_);
    }
    if (pid == 0) {
      dup2(to[0], 0);
      dup2(from[1], 1);
      close(to[0]), close(to[1]), close(from[0]), close(from[1]);
      execl(program_.c_str(), program_.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(to[0]), close(from[1]);
    pid_ = pid, write_fd_ = to[1], read_fd_ = from[0];
    return OkStatus();
  }

  void Close() override {
    CloseFds();
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    pid_ = -1;
  }

  Status ResetDevice() override {
    if (pid_ > 0) kill(pid_, SIGKILL);  // as a crash would; the stream then ends
    return OkStatus();
  }

 private:
  std::string program_, owned_dir_;
  pid_t pid_ = -1;
};

}  // namespace

std::unique_ptr<Transport> MakePipeTransport(const std::string& program, const std::string& owned_dir) {
  return std::make_unique<PipeTransport>(program, owned_dir);
}

}  // namespace hetrt::micro
