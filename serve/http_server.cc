#include "http_server.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>

#include "socket_stream.h"

namespace hetrt::serve {
namespace {

using Clock = std::chrono::steady_clock;

// The most a parked connection outlives its keep-alive: how often the parking
// thread looks for expired ones while any is parked.
constexpr auto kExpiryCheck = std::chrono::milliseconds(1000);

thread_local int request_socket = -1;  // HttpServer::RequestSocket
thread_local bool close_after_response = false;  // HttpServer::CloseAfterResponse

}  // namespace

int HttpServer::RequestSocket() { return request_socket; }

void HttpServer::CloseAfterResponse(httplib::Response& res) {
  res.set_header("Connection", "close");
  close_after_response = true;
}

// httplib's task queue for the accept loop: accepted connections go to the
// pool, and the end of the accept loop is the end of parking.
class HttpServer::Queue final : public httplib::TaskQueue {
 public:
  explicit Queue(HttpServer& server) : server_(server) {}
  void enqueue(std::function<void()> task) override { server_.pool_->enqueue(std::move(task)); }
  void shutdown() override { server_.Shutdown(); }

 private:
  HttpServer& server_;
};

HttpServer::HttpServer(const Limits& limits) : limits_(limits) {
  // httplib writes these into its Keep-Alive header and the accepted sockets'
  // SO_RCVTIMEO/SO_SNDTIMEO: they must say what this class does.
  set_keep_alive_max_count(limits.max_requests_per_connection);
  set_keep_alive_timeout(limits.keep_alive.count());
  set_read_timeout(limits.read_write_timeout.count(), 0);
  set_write_timeout(limits.read_write_timeout.count(), 0);
  new_task_queue = [this] {
    Open();
    return new Queue(*this);
  };
}

HttpServer::~HttpServer() {
  if (pool_) Shutdown();  // a listen that never ended its accept loop
}

void HttpServer::EndConnections() { ending_.store(true, std::memory_order_relaxed); }

size_t HttpServer::parked() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return parked_.size();
}

void HttpServer::Open() {
  pool_ = std::make_shared<ConnectionPool>(limits_.max_connections);
  std::lock_guard<std::mutex> lock(mutex_);
  stopping_ = false;
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  epoll_event wake{};
  wake.events = EPOLLIN;
  wake.data.fd = wake_fd_;
  if (epoll_fd_ < 0 || wake_fd_ < 0 || ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &wake) != 0) {
    // Without an epoll set nothing is parked: an idle connection is closed
    // (clients reconnect) rather than held on a worker.
    std::fprintf(stderr, "hetrt serve: warning: cannot park idle HTTP connections (%s); they are closed instead\n",
                 std::strerror(errno));
    if (epoll_fd_ >= 0) ::close(epoll_fd_);
    if (wake_fd_ >= 0) ::close(wake_fd_);
    epoll_fd_ = wake_fd_ = -1;
    return;
  }
  watcher_ = std::thread([this] { WatchParked(); });
}

bool HttpServer::process_and_close_socket(socket_t sock) {
  const Connection connection{sock, 0, Clock::now()};
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!stopping_ && open_ >= limits_.max_connections) {
      waiting_.push_back(connection);  // read once another connection closes
      return true;
    }
    ++open_;
  }
  Serve(connection);
  return true;
}

void HttpServer::Serve(Connection connection) {
  const auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(limits_.read_write_timeout);
  SocketStream stream(connection.fd, timeout, timeout);
  // The fast path's last response until it is out: the connection is read,
  // parked or closed only after it.
  std::shared_ptr<PendingReply> pending;
  auto settle = [&pending, &connection] {
    if (pending == nullptr) return true;
    const bool sent = pending->Await();
    pending.reset();
    connection.idle_since = Clock::now();  // keep-alive counts from the answer, not the request
    return sent;
  };
  for (;;) {
    if (stream.buffered() == 0) {
      // A new connection's request is usually on its way: it is parked at
      // once rather than holding a worker while a client may never send.
      const int ready =
          WaitReadable(connection.fd, connection.requests == 0 ? std::chrono::milliseconds(0) : limits_.linger,
                       pending ? WorkerWakeFd() : -1);
      if (ready == 2) {  // the response's rest is this worker's to write
        if (!settle()) return Close(connection);
        continue;
      }
      if (!settle() || ready < 0) return Close(connection);
      if (ready == 0) return Park(connection);
    }
    if (!settle()) return Close(connection);
    const bool last =
        connection.requests + 1 >= limits_.max_requests_per_connection || ending_.load(std::memory_order_relaxed);
    if (!fast_routes_.empty() && !last) {
      const Fast fast = ServeFast(stream, &pending);
      if (fast == Fast::kBroken) {
        settle();
        return Close(connection);
      }
      if (fast == Fast::kTaken) {
        ++connection.requests;
        connection.idle_since = Clock::now();
        continue;
      }
    }
    bool closed = false;
    request_socket = connection.fd;
    close_after_response = false;
    const bool served = process_request(stream, last, closed, nullptr);
    request_socket = -1;
    ++connection.requests;
    connection.idle_since = Clock::now();
    if (!served || closed || last || close_after_response) return Close(connection);
  }
}

HttpServer::Fast HttpServer::ServeFast(SocketStream& stream, std::shared_ptr<PendingReply>* pending) {
  const std::string_view bytes = stream.PeekHead();
  if (bytes.empty()) return Fast::kNotTaken;  // httplib reads it (or finds the connection gone)
  const std::optional<RequestHead> head = RequestHead::Parse(bytes);
  if (!head || head->method() != "POST" || !head->content_length() || *head->content_length() > payload_max_length_ ||
      head->Has("Transfer-Encoding") || head->Has("Expect") || head->Has("Content-Encoding"))
    return Fast::kNotTaken;
  if (RequestHead::SameText(head->Field("Connection"), "close")) return Fast::kNotTaken;
  FastRoute* route = nullptr;
  for (FastRoute* candidate : fast_routes_)
    if (candidate->Takes(*head)) {
      route = candidate;
      break;
    }
  if (route == nullptr) return Fast::kNotTaken;
  stream.Consume(bytes.size());
  const auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(limits_.read_write_timeout);
  try {
    *pending = std::make_shared<PendingReply>(stream.socket(), WorkerWakeFd(), timeout);
    return route->Serve(*head, stream, HttpReply(*pending)) ? Fast::kTaken : Fast::kBroken;
  } catch (...) {
    // Out of memory, say (a body's buffer is made as its head arrives): the
    // reply, if made, answers 500 as it is dropped unsent. The head is
    // consumed and the body may be unread: the connection closes.
    return Fast::kBroken;
  }
}

void HttpServer::Park(Connection connection) {
  bool parked = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    epoll_event event{};
    event.events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT;
    event.data.fd = connection.fd;
    if (!stopping_ && epoll_fd_ >= 0 && ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, connection.fd, &event) == 0) {
      const uint64_t ticket = ++next_ticket_;
      const bool first = parked_.empty();
      parked_[connection.fd] = {connection, ticket};
      expiries_.push({connection.idle_since + limits_.keep_alive, connection.fd, ticket});
      // With nothing parked the parking thread waits without a timeout:
      // it must learn that there is an expiry to watch.
      if (first) {
        const uint64_t one = 1;
        [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof(one));
      }
      parked = true;
    }
  }
  if (!parked) Close(connection);  // stopping: an idle connection is done
}

void HttpServer::Resume(const Connection& connection) {
  // A client that closed its idle connection needs no worker to be closed.
  char byte;
  const ssize_t n = ::recv(connection.fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) return Close(connection);
  pool_->enqueue([this, connection] { Serve(connection); });
}

void HttpServer::Close(const Connection& connection) {
  ::shutdown(connection.fd, SHUT_RDWR);
  ::close(connection.fd);
  std::optional<Connection> next;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    --open_;
    if (!stopping_ && !waiting_.empty() && open_ < limits_.max_connections) {
      next = waiting_.front();
      waiting_.pop_front();
      ++open_;
    }
  }
  if (next) pool_->enqueue([this, connection = *next] { Serve(connection); });
}

void HttpServer::WatchParked() {
  epoll_event events[64];
  for (;;) {
    int timeout_ms = -1;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) return;
      if (!expiries_.empty()) {
        const auto until = std::chrono::duration_cast<std::chrono::milliseconds>(expiries_.top().at - Clock::now());
        timeout_ms = static_cast<int>(std::clamp<int64_t>(until.count() + 1, 0, kExpiryCheck.count()));
      }
    }
    const int ready = ::epoll_wait(epoll_fd_, events, 64, timeout_ms);
    if (ready < 0 && errno != EINTR) {
      std::fprintf(stderr, "hetrt serve: parked HTTP connections: epoll_wait: %s\n", std::strerror(errno));
      std::this_thread::sleep_for(kExpiryCheck);
    }
    for (int i = 0; i < ready; ++i) {
      const int fd = events[i].data.fd;
      if (fd == wake_fd_) {
        uint64_t count;
        [[maybe_unused]] ssize_t n = ::read(wake_fd_, &count, sizeof(count));
        continue;
      }
      Connection connection;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        auto found = parked_.find(fd);
        if (found == parked_.end()) continue;
        connection = found->second.connection;
        ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);  // one-shot: disarmed, still registered
        parked_.erase(found);
      }
      Resume(connection);
    }
    std::vector<Connection> expired;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      const auto now = Clock::now();
      while (!expiries_.empty() && expiries_.top().at <= now) {
        const Expiry expiry = expiries_.top();
        expiries_.pop();
        auto found = parked_.find(expiry.fd);
        if (found == parked_.end() || found->second.ticket != expiry.ticket) continue;  // resumed since
        ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, expiry.fd, nullptr);
        expired.push_back(found->second.connection);
        parked_.erase(found);
      }
    }
    for (const Connection& connection : expired) Close(connection);
  }
}

// The accept loop has ended (a stop). A parked connection with nothing sent
// is idle: closed. One whose request has arrived, and connections past the
// bound (they may hold requests), are served; connections on workers finish
// the requests they send (EndConnections cuts that short); then the pool stops.
void HttpServer::Shutdown() {
  std::vector<Connection> idle;
  std::deque<Connection> unread;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    for (const auto& [fd, parked] : parked_) idle.push_back(parked.connection);
    parked_.clear();
    expiries_ = {};
    unread.swap(waiting_);
    open_ += unread.size();
  }
  if (wake_fd_ >= 0) {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof(one));
  }
  if (watcher_.joinable()) watcher_.join();
  for (const Connection& connection : idle) {
    char byte;
    const ssize_t n = ::recv(connection.fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n > 0)
      unread.push_back(connection);  // a request in flight: answered, then closed (stopping)
    else
      Close(connection);
  }
  for (const Connection& connection : unread) pool_->enqueue([this, connection] { Serve(connection); });
  pool_->shutdown();
  pool_.reset();
  std::lock_guard<std::mutex> lock(mutex_);
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
  epoll_fd_ = wake_fd_ = -1;
}

}  // namespace hetrt::serve
