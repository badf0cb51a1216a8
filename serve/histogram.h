// A Prometheus histogram one thread observes into and another reads: buckets
// of atomics, no lock on either side. A reading taken while observations land
// may count an observation in `count` and not yet in its bucket; Prometheus
// tolerates that (the next scrape agrees).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace hetrt::serve {

class Histogram {
 public:
  // Upper bounds, ascending; +Inf is implied.
  explicit Histogram(std::span<const double> bounds)
      : bounds_(bounds.begin(), bounds.end()), counts_(new std::atomic<uint64_t>[bounds.size() + 1]()) {}

  void Observe(double value) {
    size_t i = 0;
    while (i < bounds_.size() && value > bounds_[i]) ++i;
    counts_[i].fetch_add(1, std::memory_order_relaxed);
    count_.fetch_add(1, std::memory_order_relaxed);
    sum_.fetch_add(value, std::memory_order_relaxed);
  }

  const std::vector<double>& bounds() const { return bounds_; }
  // Per bucket (not cumulative), bounds().size() + 1 of them (the last: +Inf).
  uint64_t bucket(size_t i) const { return counts_[i].load(std::memory_order_relaxed); }
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }
  double sum() const { return sum_.load(std::memory_order_relaxed); }

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;
  std::atomic<uint64_t> count_{0};
  std::atomic<double> sum_{0};
};

}  // namespace hetrt::serve
