#include "generation_relay.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>

#include "generate_codec.h"
#include "hetrt/serve/inference.h"
#include "http_reply.h"
#include "rest_codec.h"
#include "socket_stream.h"

namespace hetrt::serve {

void GenerationRelay::Push(const GenerationEvent& event) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!streaming_) {
    events_.push_back(event);
    const bool wake = event.kind != GenerationEvent::Kind::kToken;  // admission or the end
    signalled_ = signalled_ || wake;
    lock.unlock();
    if (wake) ready_.notify_one();
    return;
  }
  if (broken_ || ended_ || event.kind == GenerationEvent::Kind::kAdmitted) return;
  FrameEvent(event);
  // While the handler sends a backlog outside the lock, the event waits its
  // turn behind it; otherwise the backlog (this event, or it behind what a
  // slow client left) goes now, from its front.
  if (!flushing_) SendNow();
  if (!backlog_.empty() || ended_ || broken_) WakeHandler();
}

GenerationRelay::~GenerationRelay() {
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void GenerationRelay::WakeHandler() {
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof one);
}

// The head of a 200 event stream on the fast path (httplib writes its own).
constexpr std::string_view kEventStreamHead =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
    "Transfer-Encoding: chunked\r\n\r\n";

void GenerationRelay::FrameRefusal(const Status& status) {
  const int code = HttpStatusOf(status);
  const std::string body = EncodeError(status.message());
  backlog_ += "HTTP/1.1 ";
  backlog_ += std::to_string(code);
  backlog_ += ' ';
  backlog_ += HttpReasonPhrase(code);
  if (code == 503) backlog_ += "\r\nRetry-After: 1";  // as the handlers' 503s: a full queue drains in about that
  backlog_ += "\r\nContent-Type: application/json\r\nContent-Length: ";
  backlog_ += std::to_string(body.size());
  backlog_ += "\r\n\r\n";
  backlog_ += body;
}

void GenerationRelay::FrameEvent(const GenerationEvent& event) {
  // (Responding, the head waits for the first token: one send for both.)
  if (ended_ || event.kind == GenerationEvent::Kind::kAdmitted) return;
  if (responding_ && !head_framed_ && event.kind == GenerationEvent::Kind::kRefused)
    FrameRefusal(event.status);
  else
    Frame(event);
  ended_ = event.kind != GenerationEvent::Kind::kToken;
}

void GenerationRelay::Frame(const GenerationEvent& event) {
  if (responding_ && !head_framed_) {
    backlog_ += kEventStreamHead;
    head_framed_ = true;
  }
  chunk_.clear();
  if (event.kind == GenerationEvent::Kind::kRefused) {  // (only a request never admitted)
    GenerationEvent ended = event;
    ended.kind = GenerationEvent::Kind::kEnd;
    ended.finish_reason = kFinishError;
    AppendGenerateStreamEvent(chunk_, prefix_, ended);
  } else {
    AppendGenerateStreamEvent(chunk_, prefix_, event);
  }
  // One chunk of the chunked body: its size in hex, the bytes, CRLF.
  char size[20];
  auto [end, ec] = std::to_chars(size, size + sizeof size, chunk_.size(), 16);
  backlog_.append(size, end);
  backlog_ += "\r\n";
  backlog_ += chunk_;
  backlog_ += "\r\n";
  if (responding_ && event.kind != GenerationEvent::Kind::kToken) backlog_ += "0\r\n\r\n";  // the body's end
}

void GenerationRelay::SendNow() {
  ssize_t n;
  do n = ::send(fd_, backlog_.data(), backlog_.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  while (n < 0 && errno == EINTR);
  if (n > 0)
    backlog_.erase(0, static_cast<size_t>(n));
  else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
    broken_ = true;
}

bool GenerationRelay::Take(std::vector<GenerationEvent>& out, std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!ready_.wait_for(lock, wait, [&] { return signalled_; })) return false;
  signalled_ = false;
  out.insert(out.end(), events_.begin(), events_.end());
  events_.clear();
  return true;
}

bool GenerationRelay::Stream(int fd, std::string prefix, const std::vector<GenerationEvent>& first) {
  return Begin(fd, std::move(prefix), first, /*responding=*/false);
}

bool GenerationRelay::Respond(int fd, std::string prefix) { return Begin(fd, std::move(prefix), {}, true); }

bool GenerationRelay::Begin(int fd, std::string prefix, std::span<const GenerationEvent> first, bool responding) {
  std::lock_guard<std::mutex> lock(mutex_);
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) return false;
  fd_ = fd;
  prefix_ = std::move(prefix);
  responding_ = responding;
  for (const GenerationEvent& e : first) FrameEvent(e);
  for (const GenerationEvent& e : events_) FrameEvent(e);
  events_.clear();
  streaming_ = true;
  if (!backlog_.empty() || ended_) WakeHandler();  // Pump sends it at once
  return true;
}

GenerationRelay::Progress GenerationRelay::Pump(std::chrono::milliseconds wait,
                                                std::chrono::milliseconds write_timeout) {
  // The client's hang-up (POLLRDHUP; POLLHUP and POLLERR come anyway, and
  // not POLLIN: a pipelined next request is no reason to wake) or the
  // scheduler's signal.
  pollfd waits[2] = {{fd_, POLLRDHUP, 0}, {wake_fd_, POLLIN, 0}};
  int ready;
  do ready = ::poll(waits, 2, static_cast<int>(wait.count()));
  while (ready < 0 && errno == EINTR);
  if (waits[1].revents & POLLIN) {
    uint64_t count;
    [[maybe_unused]] ssize_t n = ::read(wake_fd_, &count, sizeof count);
  }
  std::unique_lock<std::mutex> lock(mutex_);
  if (ready < 0 || (waits[0].revents & (POLLRDHUP | POLLHUP | POLLERR))) broken_ = true;
  while (!backlog_.empty() && !broken_) {
    std::string out;
    out.swap(backlog_);
    flushing_ = true;
    lock.unlock();
    const bool sent = SendAll(fd_, out, write_timeout);
    lock.lock();
    flushing_ = false;
    if (!sent) broken_ = true;
  }
  if (broken_) return Progress::kBroken;
  return ended_ ? Progress::kEnded : Progress::kGoing;
}

}  // namespace hetrt::serve
