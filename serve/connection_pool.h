// The HTTP listeners' workers. httplib serves a connection on one worker for
// its whole life (keep-alive included), so a fixed pool is starved by idle
// keep-alive connections and slow clients: a new request waits until a
// timeout frees a worker (seconds; longer than a Kubernetes probe's 1 s).
// This pool instead keeps a worker free: a connection arriving when none is
// idle gets a new thread, up to `max_connections`; past that bound it waits
// for a worker. Workers idle for a while exit, down to a floor, so a burst's
// threads do not stay.
#pragma once

#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>

namespace hetrt::serve {

class ConnectionPool final : public httplib::TaskQueue {
 public:
  // Workers kept however idle, and how long an extra one waits for work
  // before it exits.
  static constexpr size_t kFloor = 8;
  static constexpr std::chrono::seconds kIdleExit{30};

  explicit ConnectionPool(size_t max_connections);
  ~ConnectionPool() override { shutdown(); }

  // A connection to serve: an idle worker takes it, or a new one.
  void enqueue(std::function<void()> connection) override;
  // Serves what is queued, then waits until every worker has exited.
  void shutdown() override;

  // For tests and metrics.
  size_t workers() const;
  size_t busy() const;

 private:
  void Work();

  const size_t max_workers_;
  mutable std::mutex mutex_;
  std::condition_variable ready_;    // a connection queued, or shutdown
  std::condition_variable exited_;   // a worker exited
  std::deque<std::function<void()>> queue_;
  size_t live_ = 0;  // workers (detached threads) that have not exited
  size_t idle_ = 0;  // of those, waiting for a connection
  bool shutting_down_ = false;
};

}  // namespace hetrt::serve
