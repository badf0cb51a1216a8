// `hetrt serve`: a model repository over the Open Inference Protocol (KServe
// v2): REST, gRPC and Prometheus metrics, each on its own port.
#include <pthread.h>

#include <csignal>
#include <cstdio>

#include "commands.h"
#include "hetrt/serve/frontend.h"
#include "hetrt/serve/inference_server.h"

namespace hetrt::cli {
namespace {

struct ServeArgs {
  serve::ServerOptions options;
  std::string host = "127.0.0.1";
  int http_port = 8000, grpc_port = 8001, metrics_port = 8002;
  int64_t max_request_mib = 256;
};

int Serve(ServeArgs& args) {
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
  cmd->add_option("--model-repository", args->options.model_repository,
                  "DIR/<model>/<version>/ with a deploy .so, graph.json + lib .so (+ params), or an MLF .tar")
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
  return [args] { return Serve(*args); };
}

}  // namespace hetrt::cli
