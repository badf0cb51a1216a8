// The floor under a server's cost per streamed token: one Server-Sent Event
// (a chunk of a chunked HTTP body, the size hetrt serve sends for tiny_llama)
// sent on a loopback TCP connection while a client reads it, no model and no
// server around it. A streaming server cannot send a token for less CPU than
// this; on loopback the send also carries the client's side of TCP (the
// receive runs in the sender's context), so it is the fair baseline for
// bench/llm_serve_load.py's "server's own CPU per token", which is measured
// on loopback too.
//
// Per event: the sending thread's CPU (CLOCK_THREAD_CPUTIME_ID), as the
// server's scheduler thread sends (one event per connection per step, round
// robin over the connections, MSG_DONTWAIT). Flat out (step_us 0) readers are
// more often awake and the caches warm: the floor is the lower for it; paced
// by a step (step_us 1000) it is the floor behind a model.
#include <benchmark/benchmark.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

uint64_t ThreadCpuNs() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(t.tv_nsec);
}

// `n` connected loopback TCP pairs: {server side, client side}.
std::vector<std::pair<int, int>> ConnectedPairs(int n) {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || ::listen(listener, 128) != 0 ||
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) != 0)
    return {};
  std::vector<std::pair<int, int>> pairs;
  for (int i = 0; i < n; ++i) {
    const int client = ::socket(AF_INET, SOCK_STREAM, 0);
    if (::connect(client, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) return {};
    const int server = ::accept(listener, nullptr, nullptr);
    const int one = 1;
    ::setsockopt(server, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // as hetrt serve's sockets
    pairs.push_back({server, client});
  }
  ::close(listener);
  return pairs;
}

// range(0): connections; range(1): 1 = a client thread per connection, each
// asleep in recv() until its event comes (as a load client with a thread per
// stream: the send then also wakes it), 0 = one client thread polling them all;
// range(2): microseconds the sender computes between rounds (0: flat out), as
// a server's scheduler runs a model step between two rounds of tokens: the
// readers have read everything and sleep (and their core may idle) when the
// next round comes, and the step has streamed 8 MiB through the caches (as a
// model's weights and activations do), so the send finds the kernel's socket
// paths cold, as behind a real model.
void BM_SseEventOnLoopback(benchmark::State& state) {
  const int connections = static_cast<int>(state.range(0));
  const bool thread_per_connection = state.range(1) != 0;
  const auto step = std::chrono::microseconds(state.range(2));
  auto pairs = ConnectedPairs(connections);
  if (pairs.empty()) return state.SkipWithError("no loopback TCP connections");
  std::atomic<bool> stop{false};
  std::vector<std::thread> readers;
  if (thread_per_connection) {
    for (auto& pair : pairs)
      readers.emplace_back([client = pair.second] {
        char buffer[65536];
        while (::recv(client, buffer, sizeof buffer, 0) > 0) {
        }
      });
  } else {
    readers.emplace_back([&] {
      std::vector<pollfd> waits;
      for (auto& [server, client] : pairs) waits.push_back({client, POLLIN, 0});
      char buffer[65536];
      while (!stop.load(std::memory_order_relaxed)) {
        if (::poll(waits.data(), waits.size(), 10) <= 0) continue;
        for (pollfd& w : waits)
          if (w.revents & POLLIN) (void)::recv(w.fd, buffer, sizeof buffer, MSG_DONTWAIT);
      }
    });
  }
  // What hetrt serve sends per token of tiny_llama: the chunk framing and the event.
  const std::string event = "data: {\"model_name\":\"tiny_llama\",\"model_version\":\"1\",\"output_ids\":[195]}\n\n";
  const std::string chunk = "4c\r\n" + event + "\r\n";
  uint64_t events = 0, cpu = 0, refused = 0;
  std::vector<char> working_set(step.count() > 0 ? 8u << 20 : 0);
  for (auto _ : state) {
    // The step: computing through its working set, not asleep (outside the measured CPU).
    for (const auto until = std::chrono::steady_clock::now() + step; std::chrono::steady_clock::now() < until;)
      for (size_t i = 0; i < working_set.size(); i += 64) ++working_set[i];
    const uint64_t start = ThreadCpuNs();
    for (auto& [server, client] : pairs) {
      const ssize_t n = ::send(server, chunk.data(), chunk.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n != static_cast<ssize_t>(chunk.size())) ++refused;  // a full buffer: the reader is behind
    }
    cpu += ThreadCpuNs() - start;
    events += pairs.size();
  }
  stop = true;
  for (auto& [server, client] : pairs) ::shutdown(server, SHUT_RDWR);  // ends the blocked readers
  for (std::thread& r : readers) r.join();
  for (auto& [server, client] : pairs) {
    ::close(server);
    ::close(client);
  }
  benchmark::DoNotOptimize(working_set.data());
  state.counters["sender_cpu_us_per_event"] = static_cast<double>(cpu) / 1e3 / static_cast<double>(events);
  state.counters["refused"] = static_cast<double>(refused);
  state.SetItemsProcessed(static_cast<int64_t>(events));
}
BENCHMARK(BM_SseEventOnLoopback)
    ->ArgNames({"connections", "thread_each", "step_us"})
    ->ArgsProduct({{4, 16, 32}, {1, 0}, {0, 1000}})
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
