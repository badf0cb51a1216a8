#include "connection_pool.h"

#include <algorithm>
#include <thread>

namespace hetrt::serve {

ConnectionPool::ConnectionPool(size_t max_connections) : max_workers_(std::max(max_connections, kFloor)) {
  try {
    for (size_t i = 0; i < kFloor; ++i) {
      std::lock_guard<std::mutex> lock(mutex_);
      std::thread([this] { Work(); }).detach();
      ++live_;
    }
  } catch (...) {
    shutdown();  // the workers started use this object: gone before it is
    throw;
  }
}

void ConnectionPool::enqueue(std::function<void()> connection) {
  std::lock_guard<std::mutex> lock(mutex_);
  queue_.push_back(std::move(connection));
  // Every idle worker is spoken for by a queued connection: start one more,
  // so a new client never waits behind idle or slow ones (within the bound).
  if (queue_.size() > idle_ && live_ < max_workers_) {
    try {
      std::thread([this] { Work(); }).detach();
      ++live_;
    } catch (const std::system_error&) {  // out of threads: the connection waits for a worker
    }
  }
  ready_.notify_one();
}

void ConnectionPool::Work() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    ++idle_;
    const bool woke = ready_.wait_for(lock, kIdleExit, [this] { return !queue_.empty() || shutting_down_; });
    --idle_;
    if (queue_.empty()) {
      if (shutting_down_ || (!woke && live_ > kFloor)) break;
      continue;
    }
    std::function<void()> connection = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    connection();  // serves the connection until it closes
    connection = nullptr;
    lock.lock();
  }
  // The last touch of this object: shutdown() may destroy it once live_ is 0.
  --live_;
  exited_.notify_all();
}

void ConnectionPool::shutdown() {
  std::unique_lock<std::mutex> lock(mutex_);
  shutting_down_ = true;
  ready_.notify_all();
  exited_.wait(lock, [this] { return live_ == 0; });
}

size_t ConnectionPool::workers() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return live_;
}

size_t ConnectionPool::busy() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return live_ - idle_;
}

}  // namespace hetrt::serve
