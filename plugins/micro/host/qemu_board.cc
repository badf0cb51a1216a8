#include "qemu_board.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "host_files.h"

namespace hetrt::micro {
namespace fs = std::filesystem;
namespace {

using Clock = std::chrono::steady_clock;

int MillisecondsLeft(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left > 0 ? static_cast<int>(left) : 0;
}

std::vector<std::string> QemuArgs(const BoardSpec& board, const std::string& elf) {
  return {"qemu-system-arm",
          "-M",
          board.qemu_machine,
          "-display",
          "none",
          "-monitor",
          "none",
          "-nodefaults",
          "-semihosting-config",
          "enable=on,target=native",
          "-icount",
          "shift=" + std::to_string(kQemuIcountShift) + ",align=off,sleep=off",
          "-kernel",
          elf};
}

// Starts QEMU with stdin from /dev/null, stdout to `out_fd` and stderr to
// `log_path`; it is killed if this process dies.
Result<pid_t> Spawn(const std::vector<std::string>& args, int out_fd, const std::string& log_path) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return Unavailable("cannot fork to start qemu-system-arm");
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(126);
    const int null_fd = open("/dev/null", O_RDONLY);
    const int log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (null_fd >= 0) dup2(null_fd, 0);
    if (out_fd >= 0)
      dup2(out_fd, 1);
    else if (log_fd >= 0)
      dup2(log_fd, 1);
    if (log_fd >= 0) dup2(log_fd, 2);
    execvp(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

// A private folder for QEMU's sockets and log, removed with it.
struct TempDir {
  std::string path;
  TempDir() {
    std::string templ = (fs::temp_directory_path() / "hetrt-qemu-XXXXXX").string();
    if (mkdtemp(templ.data())) path = templ;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
};

void KillAndReap(pid_t& pid) {
  if (pid > 0) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  pid = -1;
}

// Accepts one connection within the deadline, unless QEMU exits first.
Result<int> AcceptFrom(int listen_fd, pid_t qemu, Clock::time_point deadline, const std::string& what,
                       const std::string& log) {
  for (;;) {
    pollfd p{listen_fd, POLLIN, 0};
    const int ready = poll(&p, 1, 50);
    if (ready > 0) {
      const int fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) return fd;
    }
    int status = 0;
    if (waitpid(qemu, &status, WNOHANG) == qemu)
      return Unavailable("qemu-system-arm exited before connecting its " + what + ": " + ReadText(log));
    if (MillisecondsLeft(deadline) == 0)
      return Unavailable("qemu-system-arm did not connect its " + what + " within the start-up time");
  }
}

class QemuTransport final : public FdTransport {
 public:
  QemuTransport(const BoardSpec& board, std::string elf) : board_(board), elf_(std::move(elf)) {}
  ~QemuTransport() override { Close(); }

  std::string Describe() const override {
    return "qemu " + board_.name + (pid_ > 0 ? " (pid " + std::to_string(pid_) + ")" : "");
  }

  Status Open() override {
    Close();
    HETRT_RETURN_IF_ERROR(RequireQemu());
    dir_ = std::make_unique<TempDir>();
    if (dir_->path.empty()) return Unavailable("cannot create a folder for QEMU's sockets");
    // UART0: QEMU connects to a port we hold, so no other process can take it.
    const int uart_listen = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (uart_listen < 0 || bind(uart_listen, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        listen(uart_listen, 1) != 0 || getsockname(uart_listen, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      if (uart_listen >= 0) close(uart_listen);
      return Unavailable(std::string("cannot listen on 127.0.0.1 for QEMU's UART: ") + std::strerror(errno));
    }
    const std::string monitor_path = dir_->path + "/monitor.sock";
    const int monitor_listen = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un un{};
    un.sun_family = AF_UNIX;
    std::strncpy(un.sun_path, monitor_path.c_str(), sizeof un.sun_path - 1);
    if (monitor_listen < 0 || bind(monitor_listen, reinterpret_cast<sockaddr*>(&un), sizeof un) != 0 ||
        listen(monitor_listen, 1) != 0) {
      close(uart_listen);
      if (monitor_listen >= 0) close(monitor_listen);
      return Unavailable("cannot listen on " + monitor_path + " for QEMU's monitor");
    }
    std::vector<std::string> args = QemuArgs(board_, elf_);
    args.insert(args.end(), {"-serial", "tcp:127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + ",nodelay=on",
                             "-chardev", "socket,id=mon,path=" + monitor_path, "-mon", "chardev=mon,mode=readline"});
    log_ = dir_->path + "/qemu.log";
    auto pid = Spawn(args, -1, log_);
    if (!pid.ok()) {
      close(uart_listen), close(monitor_listen);
      return pid.status();
    }
    pid_ = *pid;
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    auto uart = AcceptFrom(uart_listen, pid_, deadline, "UART", log_);
    auto monitor = uart.ok() ? AcceptFrom(monitor_listen, pid_, deadline, "monitor", log_) : uart.status();
    close(uart_listen), close(monitor_listen);
    if (!uart.ok() || !monitor.ok()) {
      if (uart.ok()) close(*uart);
      KillAndReap(pid_);
      return uart.ok() ? monitor.status() : uart.status();
    }
    const int one = 1;
    setsockopt(*uart, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    read_fd_ = write_fd_ = *uart;
    monitor_fd_ = *monitor;
    return OkStatus();
  }

  void Close() override {
    CloseFds();
    if (monitor_fd_ >= 0) close(monitor_fd_);
    monitor_fd_ = -1;
    KillAndReap(pid_);
    dir_.reset();
  }

  Status ResetDevice() override {
    if (monitor_fd_ < 0) return FailedPrecondition(Describe() + " is not running");
    static const char kCommand[] = "system_reset\n";
    if (write(monitor_fd_, kCommand, sizeof kCommand - 1) != static_cast<ssize_t>(sizeof kCommand - 1))
      return Unavailable(Describe() + ": the monitor did not take system_reset");
    return OkStatus();
  }

  Result<size_t> Read(uint8_t* data, size_t capacity, int timeout_ms) override {
    auto n = FdTransport::Read(data, capacity, timeout_ms);
    if (!n.ok() && pid_ > 0) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return Unavailable(Describe() + ": qemu-system-arm exited (status " +
                           std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + "): " + ReadText(log_));
      }
    }
    return n;
  }

 private:
  const BoardSpec& board_;
  std::string elf_, log_;
  std::unique_ptr<TempDir> dir_;
  pid_t pid_ = -1;
  int monitor_fd_ = -1;
};

}  // namespace

uint64_t InstructionsFromTicks(uint64_t ticks, uint32_t tick_hz) {
  if (tick_hz == 0) return 0;
  // ticks / tick_hz seconds of virtual time, 2^shift ns per instruction; the
  // two tick readings each round down, so round to the nearest instruction.
  const unsigned __int128 ns_per_insn_times_hz = static_cast<unsigned __int128>(tick_hz) << kQemuIcountShift;
  const unsigned __int128 scaled = static_cast<unsigned __int128>(ticks) * 1000000000u;
  return static_cast<uint64_t>((scaled + ns_per_insn_times_hz / 2) / ns_per_insn_times_hz);
}

Status RequireQemu() {
  if (std::system("command -v qemu-system-arm > /dev/null 2>&1") != 0)
    return Unavailable("qemu-system-arm is not installed (Debian: qemu-system-arm)");
  return OkStatus();
}

Result<QemuStandaloneRun> RunQemuStandalone(const BoardSpec& board, const std::string& elf, int timeout_ms) {
  HETRT_RETURN_IF_ERROR(RequireQemu());
  if (!fs::exists(elf)) return NotFound("no firmware at " + elf);
  TempDir dir;
  if (dir.path.empty()) return Unavailable("cannot create a folder for QEMU's log");
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return Unavailable("cannot create a pipe for QEMU's UART");
  std::vector<std::string> args = QemuArgs(board, elf);
  args.insert(args.end(), {"-serial", "stdio"});
  const std::string log = dir.path + "/qemu.log";
  auto spawned = Spawn(args, out[1], log);
  close(out[1]);
  if (!spawned.ok()) {
    close(out[0]);
    return spawned.status();
  }
  pid_t pid = *spawned;
  QemuStandaloneRun run;
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  bool timed_out = false;
  for (;;) {
    pollfd p{out[0], POLLIN, 0};
    const int left = MillisecondsLeft(deadline);
    if (left == 0) {
      timed_out = true;
      break;
    }
    if (poll(&p, 1, left) <= 0) continue;
    char buf[4096];
    const ssize_t n = read(out[0], buf, sizeof buf);
    if (n <= 0) break;  // QEMU closed its stdout: it is exiting
    run.uart.append(buf, static_cast<size_t>(n));
  }
  close(out[0]);
  int status = 0;
  if (timed_out) {
    KillAndReap(pid);
    return Unavailable("the firmware on " + board.name + " did not finish within " + std::to_string(timeout_ms) +
                       " ms; it printed:\n" + run.uart);
  }
  waitpid(pid, &status, 0);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  run.log = ReadText(log);
  return run;
}

std::unique_ptr<Transport> MakeQemuTransport(const BoardSpec& board, const std::string& elf) {
  return std::make_unique<QemuTransport>(board, elf);
}

}  // namespace hetrt::micro
