// A generation's events on their way from the model's scheduler thread to an
// HTTP client (REST's generate and generate_stream, docs/serving-llm.md).
//
// While the handler waits for the answer to begin (admission), events queue
// here for it. Once it streams, each token's Server-Sent Event is sent to the
// socket by the scheduler thread itself, without blocking (MSG_DONTWAIT): a
// token then costs one send, not a wake-up of the handler's thread and a
// switch to it and back. What the socket does not take at once (a slow
// client), and the end of the stream, go to the handler's thread, which sends
// them blocking; the scheduler never waits for a client. Meanwhile the
// handler's thread sleeps in poll() on the client's socket and an eventfd the
// scheduler signals: a client that hangs up wakes it at once, and its request
// is cancelled before the next step, at no cost to the tokens sent.
//
// On the fast path (http_server.h's FastRoute) the relay writes the whole
// response from the start (Respond): the HTTP head goes out with the first
// token, the body's end with the last event, a refusal as an error response;
// the handler's thread only waits in Pump, woken once, at the end.
//
// Thread contract: Push on the scheduler thread (one at a time per
// generation); everything else on the handler's thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "hetrt/serve/generation.h"

namespace hetrt::serve {

class GenerationRelay {
 public:
  GenerationRelay() = default;
  ~GenerationRelay();
  GenerationRelay(const GenerationRelay&) = delete;
  GenerationRelay& operator=(const GenerationRelay&) = delete;

  // The sink's side.
  void Push(const GenerationEvent& event);

  // Waits up to `wait` for the admission or the end and moves the events
  // queued so far to `out`; false when neither came (tokens alone do not
  // count: the caller looks whether its client is still there).
  bool Take(std::vector<GenerationEvent>& out, std::chrono::milliseconds wait);

  // From now on events go to `fd` as the chunks of a chunked HTTP body, each
  // an event of AppendGenerateStreamEvent with `prefix`; `first` are the
  // events taken so far (they go first). False when it cannot wait on the
  // socket (no eventfd: out of file descriptors).
  bool Stream(int fd, std::string prefix, const std::vector<GenerationEvent>& first);
  // Instead of Take and Stream, before the request starts: the relay writes
  // the whole HTTP response to `fd` (a 200 event stream once admitted, with
  // its last chunk; or the error response of a refusal, 503s with
  // Retry-After). False as Stream.
  bool Respond(int fd, std::string prefix);
  enum class Progress { kGoing, kEnded, kBroken };
  // While streaming: sends what the scheduler left (blocking, at most
  // `write_timeout` without progress), waiting up to `wait` for it. kEnded
  // once the last event is out (the body's last chunk is the caller's);
  // kBroken when the client is gone or stopped reading.
  Progress Pump(std::chrono::milliseconds wait, std::chrono::milliseconds write_timeout);

 private:
  // Stream and Respond: from now on events go to `fd`, `first` and those
  // queued so far first.
  bool Begin(int fd, std::string prefix, std::span<const GenerationEvent> first, bool responding);
  // Under mutex_, streaming: frames `event` as what the response needs next
  // (nothing for an admission or after the end); sets ended_ at the last.
  void FrameEvent(const GenerationEvent& event);
  // Appends `event` to backlog_ as one chunk (after the response's head
  // when the relay responds, and before the last chunk when it ends).
  void Frame(const GenerationEvent& event);
  // Responding, before the head: the refusal's whole error response.
  void FrameRefusal(const Status& status);
  // Under mutex_, scheduler thread: sends what it can of backlog_ at once.
  void SendNow();
  void WakeHandler();  // streaming: signals wake_fd_

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<GenerationEvent> events_;  // before Stream
  bool signalled_ = false;              // events_ holds an admission or the end
  bool streaming_ = false;
  bool responding_ = false;   // the relay writes the head and the body's end too
  bool head_framed_ = false;  // responding: the 200's head is in backlog_ (or sent)
  int fd_ = -1;
  int wake_fd_ = -1;  // an eventfd, while streaming
  std::string prefix_;
  std::string backlog_;    // framed bytes not yet sent
  std::string chunk_;      // scratch for one event
  bool flushing_ = false;  // the handler sends a backlog outside the lock
  bool ended_ = false;     // the last event is framed
  bool broken_ = false;
};

}  // namespace hetrt::serve
