// The response to a request the server's fast path took (http_server.h),
// written by whichever thread finishes the request (hetrt serve's instance)
// without blocking it: as much as the socket takes at once. What a slow
// reader leaves is written by the connection's worker, woken through its
// eventfd, so neither the instance nor another client ever waits for it. The
// worker reads the connection's next request only once the response is out.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace hetrt::serve {

// "OK", "Not Found", ...: the reason phrase of a response's status line.
const char* HttpReasonPhrase(int status);

// Bytes a response sends after its body from where they lie (a response's
// binary outputs, in its tensors), and what keeps them there until written.
struct ReplyTail {
  std::vector<std::string_view> parts;
  std::shared_ptr<const void> owner;
};

// The state the connection's worker and the answering thread share.
class PendingReply {
 public:
  PendingReply(int fd, int worker_wake_fd, std::chrono::milliseconds write_timeout)
      : fd_(fd), wake_fd_(worker_wake_fd), write_timeout_(write_timeout) {}

  // Once, from any thread: writes what the socket takes now.
  void Send(int status, std::string_view content_type, std::string body, std::string_view extra_field,
            std::string_view extra_value, ReplyTail tail) noexcept;
  // Instead of Send, once: the route wrote the response itself (a stream, on
  // the connection's worker); `complete` when all of it went out.
  void Wrote(bool complete) noexcept;
  // On the connection's worker: waits for Send, writes what it left (waiting
  // at most the write timeout for progress); false when the response could
  // not be written in full (the connection is then closed).
  bool Await();

 private:
  enum State : int { kPending, kSent, kLeft, kFailed };
  // Writes from written_ on; kSent, kLeft (would block: only with
  // `dont_wait`) or kFailed.
  State Write(bool dont_wait);

  const int fd_, wake_fd_;
  const std::chrono::milliseconds write_timeout_;
  std::atomic<int> state_{kPending};
  std::string head_, body_;  // written by Send, then by Await once state_ says so
  ReplyTail tail_;
  size_t written_ = 0;  // of head_, body_ and tail_'s parts, in that order
};

// A fast route's handle on its response: Send exactly once, from any thread;
// one dropped without a Send answers 500, so a connection never waits forever.
class HttpReply {
 public:
  explicit HttpReply(std::shared_ptr<PendingReply> pending) : pending_(std::move(pending)) {}
  HttpReply(HttpReply&&) = default;
  HttpReply& operator=(HttpReply&&) = delete;
  ~HttpReply();

  void Send(int status, std::string_view content_type, std::string body, std::string_view extra_field = {},
            std::string_view extra_value = {}, ReplyTail tail = {});
  // Or: the response was written on the socket by the route itself (`complete`:
  // all of it; otherwise the connection closes).
  void Wrote(bool complete);

 private:
  std::shared_ptr<PendingReply> pending_;  // NULL once sent
};

// The calling thread's eventfd for PendingReply's wake-ups (made on first use,
// closed when the thread ends); -1 when none can be made.
int WorkerWakeFd();

}  // namespace hetrt::serve
