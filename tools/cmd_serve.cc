// `hetrt serve`: a model repository over the Open Inference Protocol (KServe
// v2): REST, gRPC and Prometheus metrics, each on its own port.
#include <pthread.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "commands.h"
#include "hetrt/plugin_host/plugin_registry.h"
#include "hetrt/serve/frontend.h"
#include "hetrt/serve/inference_server.h"
#include "hetrt/serve/process_tuning.h"
#include "hetrt/serve/scheduling.h"

namespace hetrt::cli {
namespace {

struct ServeArgs {
  serve::ServerOptions options;
  std::string host = "127.0.0.1";
  int http_port = 8000, grpc_port = 8001, metrics_port = 8002;
  int64_t max_request_mib = 256;
  int64_t max_connections = 1024;
  int64_t cpu_spin_us = 20;
  int64_t cpu_serial_below_us = -1;
  std::string scheduling = "batch";
  double drain_timeout_s = 20;
};

// Each connection holds a file descriptor; the soft limit (often 1024) would
// refuse connections below --max-connections. Raised up to the hard limit,
// as servers do; a limit that stays too low is reported.
void RaiseOpenFileLimit(size_t connections) {
  const rlim_t wanted = static_cast<rlim_t>(3 * connections + 256);  // REST + metrics + gRPC, models, plugins
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= wanted) return;
  limit.rlim_cur = std::min(wanted, limit.rlim_max);
  if (setrlimit(RLIMIT_NOFILE, &limit) != 0) getrlimit(RLIMIT_NOFILE, &limit);
  if (limit.rlim_cur < wanted)
    std::fprintf(stderr, "hetrt serve: warning: open files limited to %llu (ulimit -n); --max-connections %zu "
                 "wants %llu\n", static_cast<unsigned long long>(limit.rlim_cur), connections,
                 static_cast<unsigned long long>(wanted));
}

// A CPU plugin option for the process-wide plugin and for the plugins a model
// opens of its own (config.json parameters, which win).
void DefaultCpuOption(serve::ServerOptions& options, const char* key, int64_t value, const char* flag) {
  const std::string text = std::to_string(value);
  if (auto cpu = PluginRegistry::Global().ForDeviceType(kDLCPU); cpu.ok())
    if (Status s = (*cpu)->SetOption(key, text); !s.ok())
      std::fprintf(stderr, "hetrt serve: warning: %s: %s\n", flag, s.message().c_str());
  options.plugin_defaults.push_back({"cpu", key, text});
}

int Serve(ServeArgs& args) {
  serve::SkipGrpcDeadlockChecksForThisProcess();
  serve::KeepLargeBuffersForThisProcess();
  // First, so that the threads started below inherit it (serve/scheduling.h).
  if (args.scheduling == "batch")
    if (Status s = serve::UseBatchSchedulingForThisProcess(); !s.ok())
      std::fprintf(stderr, "hetrt serve: warning: --scheduling batch: %s\n", s.message().c_str());
  // Signals are taken by sigwait below, never by a handler in a random thread:
  // blocked here, before any thread starts (the plugin registry's first use
  // starts the CPU plugin's pool), so every thread inherits the mask. A thread
  // without it would take a SIGTERM arriving during the drain and die of it.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  WarnAboutUnusedPlugins();
  std::signal(SIGPIPE, SIG_IGN);  // a client that hangs up must not kill the server

  args.options.max_request_bytes = static_cast<size_t>(args.max_request_mib) << 20;
  args.options.max_connections = static_cast<size_t>(args.max_connections);
  args.options.drain_timeout = std::chrono::milliseconds(static_cast<int64_t>(args.drain_timeout_s * 1000));
  RaiseOpenFileLimit(args.options.max_connections);
  // The CPU pool spins after each parallel launch so that the next one finds
  // its workers awake (200 us by default). Between a server's runs the cores
  // decode and answer requests instead: a short spin keeps back-to-back
  // operators fast and gives the rest back (bench/serve_load.py: about a
  // quarter less CPU per request at concurrency 16). HETRT_CPU_SPIN_US wins.
  // The same for instances that open their own plugins (config.json parameters).
  if (std::getenv("HETRT_CPU_SPIN_US") == nullptr)
    DefaultCpuOption(args.options, "spin_us", args.cpu_spin_us, "--cpu-spin-us");
  // A parallel loop too short to pay for waking a worker runs on the thread
  // that serves the request: on a server the other cores are busy with other
  // requests, and each wake-up costs a context switch on both sides
  // (bench/serve_load.py, mlp: about half the CPU per request). -1: twice this
  // machine's measured wake-up.
  DefaultCpuOption(args.options, "serial_below_us", args.cpu_serial_below_us, "--cpu-serial-below-us");
  auto server = serve::InferenceServer::Create(args.options);
  if (!server.ok()) return Fail(server.status().message());

  struct Listener {
    std::unique_ptr<serve::Frontend> frontend;
    int port;
  };
  std::vector<Listener> listeners;
  listeners.push_back({serve::MakeRestFrontend(**server), args.http_port});
  listeners.push_back({serve::MakeGrpcFrontend(**server), args.grpc_port});
  listeners.push_back({serve::MakeMetricsFrontend(**server), args.metrics_port});
  // Drain first, listeners after: while requests in flight finish, probes still
  // get answers (not ready, NOT_SERVING) and new requests a clear 503 /
  // UNAVAILABLE, instead of refused connections.
  auto stop_all = [&] {
    (*server)->Drain();
    for (Listener& l : listeners) l.frontend->Stop();
  };
  for (Listener& l : listeners) {
    auto port = l.frontend->Start(args.host, l.port);
    if (!port.ok()) {
      stop_all();
      return Fail(std::string(l.frontend->Protocol()) + " on " + args.host + ":" + std::to_string(l.port) + ": " +
                  port.status().message());
    }
    // One line per listener, flushed at once: a supervisor reading a pipe waits for it.
    std::printf("hetrt serve: %s listening on %s:%d\n", l.frontend->Protocol(), args.host.c_str(), *port);
    std::fflush(stdout);
  }
  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  std::fprintf(stderr, "hetrt serve: %s: finishing requests in flight\n",
               signal_number == SIGTERM ? "SIGTERM" : "SIGINT");
  stop_all();
  std::fprintf(stderr, "hetrt serve: stopped\n");
  return 0;
}

}  // namespace

Command AddServeCommand(CLI::App& app) {
  auto args = std::make_shared<ServeArgs>();
  auto* cmd = app.add_subcommand("serve", "Serve a model repository over the Open Inference Protocol (KServe v2)");
  cmd->add_option(
         "--model-repository", args->options.model_repository,
         "DIR/<model>/<version>/ with a deploy .so, graph.json + lib .so (+ params), an MLF .tar, or a language "
         "model's .so beside its tensor cache")
      ->required();
  cmd->add_option("--host", args->host, "address to listen on")->capture_default_str();
  cmd->add_option("--http-port", args->http_port, "REST port (0: any free one)")
      ->capture_default_str()
      ->check(IntInRange("--http-port", 0, 65535));
  cmd->add_option("--grpc-port", args->grpc_port, "gRPC port (0: any free one)")
      ->capture_default_str()
      ->check(IntInRange("--grpc-port", 0, 65535));
  cmd->add_option("--metrics-port", args->metrics_port, "Prometheus /metrics port (0: any free one)")
      ->capture_default_str()
      ->check(IntInRange("--metrics-port", 0, 65535));
  cmd->add_option("--model", args->options.initial_models,
                  "load only these models at start (repeatable; default: every model in the repository)");
  cmd->add_option("--max-request-mib", args->max_request_mib, "largest request body or message accepted, in MiB")
      ->capture_default_str()
      ->check(IntInRange("--max-request-mib", 1, 4095));
  cmd->add_option("--max-connections", args->max_connections,
                  "HTTP connections served at once per listener (idle keep-alive ones count; more wait for one to "
                  "close)")
      ->capture_default_str()
      ->check(IntInRange("--max-connections", 8, 65536));
  cmd->add_option("--cpu-spin-us", args->cpu_spin_us,
                  "how long the CPU plugin's idle workers spin before sleeping, in us (HETRT_CPU_SPIN_US wins)")
      ->capture_default_str()
      ->check(IntInRange("--cpu-spin-us", 0, 1000000));
  cmd->add_option("--cpu-serial-below-us", args->cpu_serial_below_us,
                  "a parallel loop whose work takes less than this on one thread runs on the request's thread "
                  "instead of waking the CPU plugin's workers, in us (-1: twice this machine's measured wake-up; "
                  "0: always split)")
      ->capture_default_str()
      ->check(IntInRange("--cpu-serial-below-us", -1, 1000000));
  cmd->add_option("--drain-timeout-s", args->drain_timeout_s,
                  "after SIGTERM, how long language models' running sequences may go on before they end with "
                  "finish_reason \"shutdown\" (new and queued requests get 503 at once)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 3600.0));
  cmd->add_option("--scheduling", args->scheduling,
                  "batch: every server thread runs SCHED_BATCH (as under chrt -b 0: a waking thread does not preempt "
                  "a running one, so instances overlap their devices); default: the kernel's policy, except for "
                  "the threads of models with several instances")
      ->capture_default_str()
      ->check(CLI::IsMember({"batch", "default"}));
  return [args] { return Serve(*args); };
}

}  // namespace hetrt::cli
