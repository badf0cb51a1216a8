// The serving core: a model repository, each model's instances and request
// queue, and the metrics; what every frontend (REST, gRPC) calls. Thread-safe:
// frontends call it from their own threads. Knows nothing of HTTP or gRPC.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hetrt/serve/generation.h"
#include "hetrt/serve/inference.h"

namespace hetrt::serve {

struct ServerOptions {
  std::string model_repository;
  // Models loaded at start: all those in the repository when empty.
  std::vector<std::string> initial_models = {};
  // Largest request a frontend accepts, in bytes (HTTP body, gRPC message).
  size_t max_request_bytes = size_t{256} << 20;
  // Connections each HTTP listener serves at once, idle keep-alive ones
  // included (a thread each: httplib serves a connection on one thread);
  // below it a new connection never waits behind others, above it it waits
  // for one to close (idle ones close after 5 s, stalled ones after 10 s).
  size_t max_connections = 1024;
  // Plugin options an instance with plugins of its own (a model whose
  // config.json has parameters) starts from; the model's parameters win.
  std::vector<PluginSetting> plugin_defaults = {};
  // How long a language model's running sequences may go on once Drain
  // begins (SIGTERM) before they end with finish_reason "shutdown".
  std::chrono::milliseconds drain_timeout{20000};
};

class InferenceServer final {
 public:
  // Scans and loads the repository; a model that fails to load is reported in
  // its state and does not stop the others.
  static Result<std::unique_ptr<InferenceServer>> Create(const ServerOptions& options);
  ~InferenceServer();

  const ServerOptions& options() const { return options_; }

  bool Live() const;
  // Ready: not shutting down and every model asked to be loaded is ready.
  bool Ready() const;
  std::string Name() const { return "hetrt"; }
  std::string Version() const;
  std::vector<std::string> Extensions() const;

  // `version` "" means the served (highest loaded) version.
  Result<ModelMetadata> Metadata(const std::string& model, const std::string& version) const;
  // NotFound for an unknown model or version; false while loading or failed.
  Result<bool> ModelReady(const std::string& model, const std::string& version) const;
  // Runs one request, blocking the calling thread until its response is ready.
  // Errors: NotFound (model or version), InvalidArgument (input/output names,
  // dtype, shape, size; the message names what was expected), Unavailable (queue
  // full, model not ready or being unloaded, server shutting down).
  Result<InferResponse> Infer(InferRequest request);
  // The same for a thread that serves other work too (an event loop: gRPC's
  // callback threads). It never waits for a queue: `done` is called exactly
  // once, before InferAsync returns (an error, or a request this thread ran)
  // or later on the thread that runs the request. This thread runs requests
  // (its own, then those queued behind it) only while their runs are short,
  // for at most about a millisecond per call.
  void InferAsync(InferRequest request, InferDone done);

  // Starts a generation on a language model (docs/serving-llm.md); its
  // events go to `sink` on the model's scheduler thread, the last one kEnd or
  // kRefused. Errors, for which `sink` is never called: NotFound (model or
  // version), InvalidArgument (the request; a model that is not a language
  // model), Unavailable (its queue is full, shutting down: retry later). The
  // handle cancels it (a client that left). Drain waits for it.
  Result<std::shared_ptr<Generation>> Generate(GenerateRequest request, GenerationSink sink);

  // The repository extension.
  std::vector<RepositoryEntry> Index(bool ready_only) const;
  Status Load(const std::string& model);
  Status Unload(const std::string& model);

  // Prometheus text exposition of every metric.
  std::string MetricsText() const;

  // Calls `observer` whenever Ready() may have changed: a model loaded or
  // unloaded, draining began. For health services that push status (gRPC's)
  // instead of being asked. It runs on the thread making the change, holding
  // the server's observer lock (and, from Load/Unload, its load lock): it may
  // read (Ready, Metadata) but must only signal its own thread for anything
  // more; calling Load, Unload, Drain or the observer functions deadlocks.
  int AddReadinessObserver(std::function<void()> observer);
  // After it returns, the observer is not running and will not be called.
  void RemoveReadinessObserver(int id);

  // Shutdown, as Triton does it: from BeginDrain on, Ready() is false and Infer
  // answers Unavailable while health, metadata and metrics still answer, so
  // probes take this server out of rotation; Drain also waits for the requests
  // in flight and stops the models. Frontends stop listening after Drain.
  // Language models: Drain refuses their queued requests and lets running
  // sequences go on for up to options().drain_timeout, then ends them.
  void BeginDrain();
  void Drain();

 private:
  explicit InferenceServer(ServerOptions options);
  // Stops the model's versions and waits until nothing holds them (their
  // libraries released), leaving the model unavailable with `reason`.
  Status RetireVersions(const std::string& model, const std::string& reason);
  struct State;
  ServerOptions options_;
  std::shared_ptr<State> state_;
};

}  // namespace hetrt::serve
