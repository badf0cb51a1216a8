// The timing the floor benchmarks share: a measured call and its floor looped
// in turn within each benchmark iteration, so the ratio of the two is immune to
// drift in machine speed.
#pragma once

#include <chrono>

#include <benchmark/benchmark.h>

namespace hetrt {

// Mean nanoseconds per call of each loop over the whole run.
struct InterleavedNs {
  double measured = 0;
  double floor = 0;
};

// Per benchmark iteration, `reps` calls of `measured`, then `reps` of `floor`.
template <class Measured, class Floor>
InterleavedNs TimeInterleaved(benchmark::State& state, int reps, Measured measured, Floor floor) {
  using clock = std::chrono::steady_clock;
  double measured_ns = 0, floor_ns = 0;
  for (auto _ : state) {
    const auto t0 = clock::now();
    for (int i = 0; i < reps; ++i) measured();
    const auto t1 = clock::now();
    for (int i = 0; i < reps; ++i) floor();
    const auto t2 = clock::now();
    measured_ns += std::chrono::duration<double, std::nano>(t1 - t0).count();
    floor_ns += std::chrono::duration<double, std::nano>(t2 - t1).count();
  }
  const double runs = static_cast<double>(state.iterations()) * reps;
  return {measured_ns / runs, floor_ns / runs};
}

}  // namespace hetrt
