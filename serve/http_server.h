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
// Routes may take a fast path past httplib (FastRoute: hetrt serve's infer
// and generate_stream): the worker parses the request's head in place, hands
// the request on and goes back to waiting for the connection's next request,
// while the thread that finishes the request writes the response
// (http_reply.h). A queued request then costs the worker no sleep and wake-up
// of its own. (A streamed response may instead be written while the worker
// waits: HttpReply::Wrote.)
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
#include "http_reply.h"
#include "http_request_head.h"
#include "socket_stream.h"

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

  // A POST route served past httplib. Only plain requests come to them: HTTP/1.1
  // with a Content-Length within the payload limit, no Transfer-Encoding,
  // Expect, Content-Encoding or "Connection: close", a head that fits the read
  // buffer, and not a connection's last request. Everything else, and what
  // Takes declines, goes through httplib's routes.
  class FastRoute {
   public:
    virtual ~FastRoute() = default;
    // Whether the route serves this request; reads nothing.
    virtual bool Takes(const RequestHead& head) const = 0;
    // Copies what it needs of `head` first (its views die with the first
    // read), reads the body (exactly Content-Length bytes) from `body`, and
    // answers through `reply` from any thread (or writes the response itself
    // and says so, HttpReply::Wrote). False when the body could not be read
    // (the connection closes once `reply` is sent).
    virtual bool Serve(const RequestHead& head, SocketStream& body, HttpReply reply) = 0;
  };
  // Before listening; the route outlives the server's listening. The first
  // route that takes a request serves it.
  void AddFastRoute(FastRoute* route) { fast_routes_.push_back(route); }

  // From now on, a connection closes after the request it is serving: for a
  // stop that has waited long enough for clients to finish by themselves.
  // (httplib's own stop() would close the listening socket a second time.)
  void EndConnections();

  // Connections parked now (for tests and metrics).
  size_t parked() const;

  // The socket of the request this thread serves through httplib's routes,
  // -1 elsewhere: a handler that waits long (a generation) asks PeerClosed
  // (socket_stream.h) with it whether anyone still waits for its answer, and
  // a stream may write to it while httplib waits for the handler.
  static int RequestSocket();
  // Called by a route of httplib's that answers before reading its request's
  // body to the end (too large, cut short): the connection closes after the
  // response, and the response says so, for the body's rest must never be
  // read as requests of its own.
  static void CloseAfterResponse(httplib::Response& res);

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
  enum class Fast { kNotTaken, kTaken, kBroken };
  // The fast path for the request at the head of `stream`, if it takes it.
  Fast ServeFast(SocketStream& stream, std::shared_ptr<PendingReply>* pending);
  void Park(Connection connection);
  void Close(const Connection& connection);
  void WatchParked();
  void Resume(const Connection& connection);

  const Limits limits_;
  std::vector<FastRoute*> fast_routes_;
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
