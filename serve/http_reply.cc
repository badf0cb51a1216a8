#include "http_reply.h"

#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <iterator>

namespace hetrt::serve {
const char* HttpReasonPhrase(int status) {
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

namespace {

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
  for (;;) {
    // The unwritten rest of head_, body_ and the tail's parts, as iovecs.
    iovec parts[64];
    size_t count = 0, skip = written_;
    auto add = [&](std::string_view bytes) {
      if (skip >= bytes.size()) {
        skip -= bytes.size();
        return;
      }
      if (count < std::size(parts)) parts[count++] = {const_cast<char*>(bytes.data()) + skip, bytes.size() - skip};
      skip = 0;
    };
    add(head_);
    add(body_);
    for (std::string_view part : tail_.parts) add(part);
    if (count == 0) return kSent;
    msghdr message{};
    message.msg_iov = parts;
    message.msg_iovlen = count;
    // MSG_NOSIGNAL: a client that hung up gives EPIPE, not a SIGPIPE. The
    // worker's write blocks in the kernel (one call for megabytes), for at
    // most the write timeout without progress (SO_SNDTIMEO, set below).
    const ssize_t n = ::sendmsg(fd_, &message, MSG_NOSIGNAL | (dont_wait ? MSG_DONTWAIT : 0));
    if (n > 0) {
      written_ += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && dont_wait) return kLeft;
    return kFailed;  // an error, a hang-up, or no progress within the write timeout
  }
}

void PendingReply::Send(int status, std::string_view content_type, std::string body, std::string_view extra_field,
                        std::string_view extra_value, ReplyTail tail) noexcept {
  State state = kFailed;
  try {
    head_.reserve(160);
    head_.append("HTTP/1.1 ").append(std::to_string(status)).append(" ").append(HttpReasonPhrase(status));
    head_.append("\r\nContent-Type: ").append(content_type);
    size_t length = body.size();
    for (std::string_view part : tail.parts) length += part.size();
    head_.append("\r\nContent-Length: ").append(std::to_string(length));
    if (!extra_field.empty()) head_.append("\r\n").append(extra_field).append(": ").append(extra_value);
    head_.append("\r\n\r\n");
    body_ = std::move(body);
    tail_ = std::move(tail);
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

void PendingReply::Wrote(bool complete) noexcept {
  state_.store(complete ? kSent : kFailed, std::memory_order_release);
  state_.notify_all();
}

bool PendingReply::Await() {
  int state;
  while ((state = state_.load(std::memory_order_acquire)) == kPending) state_.wait(kPending, std::memory_order_acquire);
  if (state == kLeft) {
    // The wake-up is for this: taken here, it cannot end a later wait early.
    if (wake_fd_ >= 0) {
      uint64_t count;
      [[maybe_unused]] ssize_t n = ::read(wake_fd_, &count, sizeof(count));
    }
    timeval timeout{};
    timeout.tv_sec = static_cast<time_t>(write_timeout_.count() / 1000);
    timeout.tv_usec = static_cast<suseconds_t>(write_timeout_.count() % 1000 * 1000);
    state = ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout) == 0 ? Write(/*dont_wait=*/false)
                                                                                      : kFailed;
  }
  return state == kSent;
}

HttpReply::~HttpReply() {
  if (pending_)
    pending_->Send(500, "application/json", R"({"error":"internal error: no response was made"})", {}, {}, {});
}

void HttpReply::Send(int status, std::string_view content_type, std::string body, std::string_view extra_field,
                     std::string_view extra_value, ReplyTail tail) {
  if (!pending_) return;
  std::shared_ptr<PendingReply> pending = std::move(pending_);
  pending->Send(status, content_type, std::move(body), extra_field, extra_value, std::move(tail));
}

void HttpReply::Wrote(bool complete) {
  if (!pending_) return;
  std::shared_ptr<PendingReply> pending = std::move(pending_);
  pending->Wrote(complete);
}

}  // namespace hetrt::serve
