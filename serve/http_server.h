// httplib's server with hetrt's handling of connections. httplib serves a
// connection on one worker for its whole life and waits for a kept-alive
// connection's next request by polling it every 10 ms: hundreds of idle
// connections then cost a thread each and wake-ups that slow every other
// client. Here a worker serves a connection while it sends requests, waits a
// little for the next one (one poll, no wake-ups), then parks the connection
// in one epoll set watched by one thread and returns to the pool; the next
// request brings the connection back to a worker. Connections open at once
// (parked ones included) are bounded; past the bound a new connection waits
// unread until another closes.
//
// Thread contract: the listen call and the stop follow httplib's rules; the
// rest runs on the workers and the parking thread this class owns.
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <queue>
#include <thread>
#include <unordered_map>
#include <vector>

#include "connection_pool.h"

namespace hetrt::serve {

class HttpServer final : public httplib::Server {
 public:
  struct Limits {
    size_t max_connections = 1024;                 // open at once, parked included
    std::chrono::seconds keep_alive{5};            // idle before a kept-alive connection is closed
    std::chrono::seconds read_write_timeout{10};   // a read or write making no progress
    size_t max_requests_per_connection = 1u << 30;
    // How long a worker waits for a kept-alive connection's next request
    // before parking it: clients that send back to back never leave their
    // worker, and cost one wake-up per request.
    std::chrono::milliseconds linger{1000};
  };
  explicit HttpServer(const Limits& limits);
  ~HttpServer() override;

  // From now on, a connection closes after the request it is serving: for a
  // stop that has waited long enough for clients to finish by themselves.
  // (httplib's own stop() would close the listening socket a second time.)
  void EndConnections();

  // Connections parked now (for tests and metrics).
  size_t parked() const;

 private:
  struct Connection {
    int fd = -1;
    size_t requests = 0;  // served on it so far
    std::chrono::steady_clock::time_point idle_since;
  };
  struct Parked {
    Connection connection;
    uint64_t ticket = 0;  // tells this parking of the fd from an earlier one
  };
  struct Expiry {
    std::chrono::steady_clock::time_point at;
    int fd;
    uint64_t ticket;
    bool operator>(const Expiry& other) const { return at > other.at; }
  };
  class Queue;

  // httplib's hook for an accepted connection, run on a worker.
  bool process_and_close_socket(socket_t sock) override;

  void Open();      // at each listen: the pool, the epoll set, the parking thread
  void Shutdown();  // when the accept loop ends: close parked, serve the rest, stop
  void Serve(Connection connection);
  void Park(Connection connection);
  void Close(const Connection& connection);
  void WatchParked();
  void Resume(const Connection& connection);

  const Limits limits_;
  std::atomic<bool> ending_{false};
  std::shared_ptr<ConnectionPool> pool_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;  // an eventfd that stops WatchParked
  std::thread watcher_;

  mutable std::mutex mutex_;
  std::unordered_map<int, Parked> parked_;  // by fd; under mutex_
  std::priority_queue<Expiry, std::vector<Expiry>, std::greater<>> expiries_;  // under mutex_
  std::deque<Connection> waiting_;  // past the bound, unread; under mutex_
  size_t open_ = 0;                 // under mutex_
  uint64_t next_ticket_ = 0;        // under mutex_
  bool stopping_ = false;           // under mutex_
};

}  // namespace hetrt::serve
