#include "http_reply.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>

namespace hetrt::serve {
namespace {

const char* Reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 413: return "Payload Too Large";
    case 415: return "Unsupported Media Type";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    default: return status < 400 ? "OK" : status < 500 ? "Bad Request" : "Internal Server Error";
  }
}

struct WakeFd {
  int fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  ~WakeFd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

int WorkerWakeFd() {
  thread_local WakeFd wake;
  return wake.fd;
}

PendingReply::State PendingReply::Write(bool dont_wait) {
  const size_t total = head_.size() + body_.size();
  while (written_ < total) {
    iovec parts[2];
    int count = 0;
    if (written_ < head_.size()) parts[count++] = {head_.data() + written_, head_.size() - written_};
    const size_t body_from = written_ > head_.size() ? written_ - head_.size() : 0;
    if (body_from < body_.size()) parts[count++] = {body_.data() + body_from, body_.size() - body_from};
    msghdr message{};
    message.msg_iov = parts;
    message.msg_iovlen = static_cast<size_t>(count);
    // MSG_NOSIGNAL: a client that hung up gives EPIPE, not a SIGPIPE.
    const ssize_t n = ::sendmsg(fd_, &message, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      written_ += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (dont_wait) return kLeft;
      pollfd entry{fd_, POLLOUT, 0};
      int ready;
      do ready = ::poll(&entry, 1, static_cast<int>(write_timeout_.count()));
      while (ready < 0 && errno == EINTR);
      if (ready > 0 && (entry.revents & POLLOUT) != 0) continue;
    }
    return kFailed;  // an error, a hang-up, or no progress within the write timeout
  }
  return kSent;
}

void PendingReply::Send(int status, std::string_view content_type, std::string body, std::string_view extra_field,
                        std::string_view extra_value) noexcept {
  State state = kFailed;
  try {
    head_.reserve(160);
    head_.append("HTTP/1.1 ").append(std::to_string(status)).append(" ").append(Reason(status));
    head_.append("\r\nContent-Type: ").append(content_type);
    head_.append("\r\nContent-Length: ").append(std::to_string(body.size()));
    if (!extra_field.empty()) head_.append("\r\n").append(extra_field).append(": ").append(extra_value);
    head_.append("\r\n\r\n");
    body_ = std::move(body);
    state = Write(/*dont_wait=*/true);
  } catch (...) {  // out of memory: the connection closes without an answer
  }
  if (state == kLeft && wake_fd_ >= 0) {
    // Before the state: once the worker sees it, this object may be its only.
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof(one));
  }
  state_.store(state, std::memory_order_release);
  state_.notify_all();
}

bool PendingReply::Await() {
  int state;
  while ((state = state_.load(std::memory_order_acquire)) == kPending) state_.wait(kPending, std::memory_order_acquire);
  if (state == kLeft) state = Write(/*dont_wait=*/false);
  return state == kSent;
}

HttpReply::~HttpReply() {
  if (pending_) pending_->Send(500, "application/json", R"({"error":"internal error: no response was made"})", {}, {});
}

void HttpReply::Send(int status, std::string_view content_type, std::string body, std::string_view extra_field,
                     std::string_view extra_value) {
  if (!pending_) return;
  std::shared_ptr<PendingReply> pending = std::move(pending_);
  pending->Send(status, content_type, std::move(body), extra_field, extra_value);
}

}  // namespace hetrt::serve
