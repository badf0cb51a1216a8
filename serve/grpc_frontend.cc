// The gRPC frontend: inference.GRPCInferenceService (the Open Inference
// Protocol plus the repository extension) and grpc.health.v1.Health on gRPC's
// callback API.
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/support/proto_buffer_reader.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "grpc_generate_codec.h"
#include "grpc_infer_codec.h"
#include "grpc_service.grpc.pb.h"
#include "hetrt/serve/frontend.h"

namespace hetrt::serve {
namespace {

// The protocol's error mapping, shared with REST through HttpStatusOf.
grpc::Status ToGrpc(const Status& status) {
  if (status.ok()) return grpc::Status::OK;
  switch (HttpStatusOf(status)) {
    case 400: return {grpc::StatusCode::INVALID_ARGUMENT, status.message()};
    case 404: return {grpc::StatusCode::NOT_FOUND, status.message()};
    case 503: return {grpc::StatusCode::UNAVAILABLE, status.message()};
    default: return {grpc::StatusCode::INTERNAL, status.message()};
  }
}

void FillTensorMetadata(const TensorMetadata& tensor, inference::ModelMetadataResponse::TensorMetadata& out) {
  out.set_name(tensor.name);
  out.set_datatype(tensor.datatype);
  for (int64_t dim : tensor.shape) out.add_shape(dim);
}

grpc::Status CheckRepositoryName(const std::string& name) {
  if (name.empty()) return grpc::Status::OK;
  return {grpc::StatusCode::UNIMPLEMENTED,
          "hetrt serves one repository: leave repository_name empty (got '" + name + "')"};
}

// Repository requests name no repository (hetrt serves one) and carry no
// parameters but Triton's `unload_dependents`, which has nothing to act on here
// (no ensembles): Triton's clients send it on every unload.
template <typename RepositoryRequest>
grpc::Status CheckRepositoryRequest(const RepositoryRequest& request, bool unload) {
  grpc::Status named = CheckRepositoryName(request.repository_name());
  if (!named.ok()) return named;
  for (const auto& [name, value] : request.parameters()) {
    (void)value;
    if (unload && name == "unload_dependents") continue;
    return {grpc::StatusCode::UNIMPLEMENTED, "repository parameter '" + name +
                                                 "' is not supported: hetrt reads each model from the repository "
                                                 "folder and its config.json"};
  }
  return grpc::Status::OK;
}

// Runs the repository's load and unload calls on a thread of its own: a load
// may compile a model for seconds, which gRPC's callback threads must not
// wait for. Calls run one at a time (the server loads one model at a time).
class LongCallThread {
 public:
  LongCallThread() : thread_([this] { Loop(); }) {}
  ~LongCallThread() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    queued_.notify_one();
    thread_.join();
  }
  void Post(std::function<void()> call) {
    {
      std::lock_guard lock(mutex_);
      calls_.push_back(std::move(call));
    }
    queued_.notify_one();
  }

 private:
  void Loop() {
    for (;;) {
      std::unique_lock lock(mutex_);
      queued_.wait(lock, [&] { return stopping_ || !calls_.empty(); });
      if (calls_.empty()) return;  // stopping, every posted call answered
      std::function<void()> call = std::move(calls_.front());
      calls_.pop_front();
      lock.unlock();
      call();
    }
  }

  std::mutex mutex_;
  std::condition_variable queued_;
  std::deque<std::function<void()>> calls_;  // under mutex_
  bool stopping_ = false;                    // under mutex_
  std::thread thread_;
};

// A received ModelInferRequest, its raw tensor bytes read straight from
// gRPC's slices into aligned host buffers. ProtoBufferReader only reads the
// buffer, though its constructor takes it as non-const.
Result<InferRequest> ReadRequest(const grpc::ByteBuffer& received) {
  grpc::ProtoBufferReader reader(const_cast<grpc::ByteBuffer*>(&received));
  Result<WireInferRequest> request = ReadInferRequest(reader, received.Length());
  if (!request.ok()) return request.status();
  return DecodeInferRequest(std::move(request).value());
}

// The response as gRPC slices: the message's own bytes copied once, a large
// output's bytes lent from its tensor, released when gRPC has sent them.
grpc::Status WriteResponse(const InferResponse& response, grpc::ByteBuffer& out) {
  Result<WireInferResponse> encoded = EncodeInferResponse(response);
  if (!encoded.ok()) return ToGrpc(encoded.status());
  std::vector<grpc::Slice> slices;
  for (WireInferResponse::Piece& piece : encoded->pieces) {
    if (!piece.bytes.empty()) slices.emplace_back(piece.bytes);
    if (!piece.tensor.defined()) continue;
    auto* lent = new Tensor(std::move(piece.tensor));
    slices.emplace_back(
        lent->data(), lent->nbytes(), [](void* tensor) { delete static_cast<Tensor*>(tensor); }, lent);
  }
  grpc::ByteBuffer buffer(slices.data(), slices.size());
  out.Swap(&buffer);
  return grpc::Status::OK;
}

// One ModelStreamInfer call (Triton's decoupled mode): each request read
// starts a generation, each of its events is written back as a response.
// Responses of all the stream's requests share one write queue (gRPC allows
// one write at a time). Events come on the models' scheduler threads, so the
// queue is locked; a decision (write, finish) is made under the lock and
// acted on after it. The reactor cannot be done while a write is in flight
// and finishes only with none, so a thread that claimed the write may start
// it after unlocking. The shared state outlives the reactor: a generation's
// sink may fire after the call ended (it then drops the event).
class GenerateStreamReactor final
    : public grpc::ServerBidiReactor<inference::ModelInferRequest, inference::ModelStreamInferResponse> {
  struct State;

 public:
  // The frontend's open streams. A client may hold a stream open with nothing
  // running (Triton's start_stream, no stop_stream): at shutdown each stream
  // ends once its generations have, rather than hold the server's stop for
  // gRPC's whole grace period.
  class Registry {
   public:
    void Add(const std::shared_ptr<State>& state) {
      std::lock_guard lock(mutex_);
      std::erase_if(states_, [](const std::weak_ptr<State>& w) { return w.expired(); });
      states_.push_back(state);
    }
    void EndAllWhenIdle() {
      std::vector<std::shared_ptr<State>> open;
      {
        std::lock_guard lock(mutex_);
        for (const auto& w : states_)
          if (auto state = w.lock()) open.push_back(std::move(state));
      }
      for (const auto& state : open) {
        GenerateStreamReactor* reactor = nullptr;
        const Action action = state->Locked([&](State& s) {
          s.closing = true;
          reactor = s.reactor;
          return s.NextAction();
        });
        // Alive while the action it claimed is not done; with none, untouched.
        if (reactor != nullptr && (action.write != nullptr || action.finish)) reactor->Act(action);
      }
    }

   private:
    std::mutex mutex_;
    std::vector<std::weak_ptr<State>> states_;
  };

  GenerateStreamReactor(InferenceServer& server, Registry& registry)
      : server_(server), state_(std::make_shared<State>()) {
    state_->reactor = this;
    registry.Add(state_);
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {  // the client is done sending (or the call ended)
      Act(state_->Locked([](State& s) {
        s.reads_done = true;
        return s.NextAction();
      }));
      return;
    }
    Begin(request_);
    // A client that sends faster than it reads stops being read until its
    // responses drain: what a stream holds stays bounded.
    const bool read_on = state_->Locked([](State& s) {
      s.read_paused = s.responses.size() >= kMaxQueuedResponses;
      return !s.read_paused && !s.finished;
    });
    if (read_on) StartRead(&request_);
  }

  void OnWriteDone(bool ok) override {
    bool resume_reading = false;
    Act(state_->Locked([&](State& s) {
      s.writing = false;
      s.responses.pop_front();
      if (!ok) s.broken = true;  // the client is gone: nothing more will be sent
      Action next = s.NextAction();
      if (s.read_paused && !s.finished && s.responses.size() <= kMaxQueuedResponses / 2) {
        s.read_paused = false;
        resume_reading = true;
      }
      return next;
    }));
    if (resume_reading) StartRead(&request_);
    if (!ok) CancelAll();
  }

  void OnCancel() override {
    CancelAll();
    Act(state_->Locked([](State& s) {
      s.broken = true;
      return s.NextAction();
    }));
  }

  void OnDone() override {
    state_->Locked([](State& s) {
      s.reactor = nullptr;
      return Action{};
    });
    CancelAll();
    delete this;
  }

 private:
  struct Action {
    inference::ModelStreamInferResponse* write = nullptr;
    bool finish = false;
    bool shutdown = false;  // the finish is the server's: a request sent meanwhile went unanswered
  };
  struct State {
    std::mutex mutex;
    GenerateStreamReactor* reactor = nullptr;                   // null once done
    std::deque<inference::ModelStreamInferResponse> responses;  // the front is being written while `writing`
    std::map<uint64_t, std::shared_ptr<Generation>> active;     // by key
    uint64_t next_key = 0;
    bool writing = false, reads_done = false, broken = false, finished = false;
    bool closing = false;      // the server stops: end once nothing runs, as if reads were done
    bool read_paused = false;  // too many responses wait: the next read waits for them

    template <typename F>
    auto Locked(F&& f) -> decltype(f(*this)) {
      std::lock_guard<std::mutex> lock(mutex);
      return f(*this);
    }
    // Under the lock: the next write, or the finish once nothing is left.
    Action NextAction() {
      if (finished || reactor == nullptr || writing) return {};
      if (!broken && !responses.empty()) {
        writing = true;
        return {&responses.front(), false};
      }
      if (broken || ((reads_done || closing) && active.empty())) {
        finished = true;
        return {nullptr, true, !broken && !reads_done};
      }
      return {};
    }
  };

  void Act(Action action) {
    if (action.write != nullptr) StartWrite(action.write);
    if (action.finish)
      Finish(action.shutdown ? grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is shutting down")
                             : grpc::Status::OK);
  }

  void CancelAll() {
    std::vector<std::shared_ptr<Generation>> active;
    state_->Locked([&](State& s) {
      for (auto& [key, g] : s.active)
        if (g != nullptr) active.push_back(g);
      return Action{};
    });
    for (auto& g : active) g->Cancel();
  }

  // Starts the generation a request asks for; a refusal is a response with
  // its error_message, and the stream goes on.
  void Begin(const inference::ModelInferRequest& request) {
    auto refuse = [&](const Status& status) {
      Act(state_->Locked([&](State& s) {
        GenerationEvent refused;
        refused.kind = GenerationEvent::Kind::kRefused;
        refused.status = status;
        EncodeGenerateResponse(refused, request.model_name(), request.model_version(), request.id(),
                               s.responses.emplace_back());
        return s.NextAction();
      }));
    };
    Result<GenerateRequest> decoded = DecodeGenerateRequest(request);
    if (!decoded.ok()) return refuse(decoded.status());
    // Listed before it starts (its events may come before Generate returns),
    // its handle filled in after; its last event takes it off.
    uint64_t key = 0;
    state_->Locked([&](State& s) {
      key = s.next_key++;
      s.active.emplace(key, nullptr);
      return Action{};
    });
    auto sink = [state = state_, key, model = request.model_name(), id = request.id()](const GenerationEvent& e) {
      if (e.kind == GenerationEvent::Kind::kAdmitted) return;
      Action action;
      GenerateStreamReactor* reactor = nullptr;
      {
        std::lock_guard<std::mutex> lock(state->mutex);
        if (e.kind != GenerationEvent::Kind::kToken) state->active.erase(key);
        if (state->finished || state->broken) return;
        EncodeGenerateResponse(e, model, std::to_string(e.model_version), id, state->responses.emplace_back());
        action = state->NextAction();
        reactor = state->reactor;
      }
      if (reactor != nullptr) reactor->Act(action);
    };
    Result<std::shared_ptr<Generation>> started = server_.Generate(std::move(decoded).value(), std::move(sink));
    state_->Locked([&](State& s) {
      auto it = s.active.find(key);
      if (it == s.active.end()) return Action{};  // ended already
      if (started.ok()) {
        it->second = *started;
        return Action{};
      }
      s.active.erase(it);  // refuse() below answers, then the stream may finish
      return Action{};
    });
    if (!started.ok()) return refuse(started.status());
  }

  // Responses a stream may hold before it stops reading requests.
  static constexpr size_t kMaxQueuedResponses = 4096;

  InferenceServer& server_;
  std::shared_ptr<State> state_;
  inference::ModelInferRequest request_;
};

// On gRPC's callback API: one thread serves many calls, and ModelInfer
// completes when its request has run, on whichever thread ran it, instead of
// holding a server thread while it waits in the model's queue. ModelInfer
// takes and gives gRPC's byte buffers (its raw variant): tensor bytes move
// between the wire and host tensors without passing through protobuf strings.
class InferenceService final : public inference::GRPCInferenceService::WithRawCallbackMethod_ModelInfer<
                                   inference::GRPCInferenceService::CallbackService> {
 public:
  explicit InferenceService(InferenceServer& server) : server_(server) {}

  grpc::ServerUnaryReactor* ServerLive(grpc::CallbackServerContext* context, const inference::ServerLiveRequest*,
                                       inference::ServerLiveResponse* response) override {
    response->set_live(server_.Live());
    return Finished(context, grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* ServerReady(grpc::CallbackServerContext* context, const inference::ServerReadyRequest*,
                                        inference::ServerReadyResponse* response) override {
    response->set_ready(server_.Ready());
    return Finished(context, grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* ModelReady(grpc::CallbackServerContext* context,
                                       const inference::ModelReadyRequest* request,
                                       inference::ModelReadyResponse* response) override {
    Result<bool> ready = server_.ModelReady(request->name(), request->version());
    if (ready.ok()) response->set_ready(*ready);
    return Finished(context, ToGrpc(ready.status()));
  }

  grpc::ServerUnaryReactor* ServerMetadata(grpc::CallbackServerContext* context,
                                           const inference::ServerMetadataRequest*,
                                           inference::ServerMetadataResponse* response) override {
    response->set_name(server_.Name());
    response->set_version(server_.Version());
    for (const std::string& extension : server_.Extensions()) response->add_extensions(extension);
    return Finished(context, grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* ModelMetadata(grpc::CallbackServerContext* context,
                                          const inference::ModelMetadataRequest* request,
                                          inference::ModelMetadataResponse* response) override {
    Result<serve::ModelMetadata> metadata = server_.Metadata(request->name(), request->version());
    if (!metadata.ok()) return Finished(context, ToGrpc(metadata.status()));
    response->set_name(metadata->name);
    for (const std::string& version : metadata->versions) response->add_versions(version);
    response->set_platform(metadata->platform);
    for (const TensorMetadata& input : metadata->inputs) FillTensorMetadata(input, *response->add_inputs());
    for (const TensorMetadata& output : metadata->outputs) FillTensorMetadata(output, *response->add_outputs());
    return Finished(context, grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* ModelInfer(grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
                                       grpc::ByteBuffer* response) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    Result<InferRequest> decoded = ReadRequest(*request);
    if (!decoded.ok()) {
      reactor->Finish(ToGrpc(decoded.status()));
      return reactor;
    }
    // `response` lives until the reactor is finished.
    server_.InferAsync(std::move(decoded).value(), [reactor, response](Result<InferResponse> result) {
      reactor->Finish(result.ok() ? WriteResponse(*result, *response) : ToGrpc(result.status()));
    });
    return reactor;
  }

  // Language models' token streams (Triton's decoupled mode).
  grpc::ServerBidiReactor<inference::ModelInferRequest, inference::ModelStreamInferResponse>* ModelStreamInfer(
      grpc::CallbackServerContext*) override {
    return new GenerateStreamReactor(server_, streams_);
  }

  GenerateStreamReactor::Registry& streams() { return streams_; }

  grpc::ServerUnaryReactor* RepositoryIndex(grpc::CallbackServerContext* context,
                                            const inference::RepositoryIndexRequest* request,
                                            inference::RepositoryIndexResponse* response) override {
    grpc::Status named = CheckRepositoryName(request->repository_name());
    if (!named.ok()) return Finished(context, named);
    for (const RepositoryEntry& entry : server_.Index(request->ready())) {
      auto* model = response->add_models();
      model->set_name(entry.name);
      model->set_version(entry.version);
      model->set_state(entry.state);
      model->set_reason(entry.reason);
    }
    return Finished(context, grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* RepositoryModelLoad(grpc::CallbackServerContext* context,
                                                const inference::RepositoryModelLoadRequest* request,
                                                inference::RepositoryModelLoadResponse*) override {
    return OnLongCallThread(context, *request, /*unload=*/false);
  }

  grpc::ServerUnaryReactor* RepositoryModelUnload(grpc::CallbackServerContext* context,
                                                  const inference::RepositoryModelUnloadRequest* request,
                                                  inference::RepositoryModelUnloadResponse*) override {
    return OnLongCallThread(context, *request, /*unload=*/true);
  }

 private:
  // A load or unload can take seconds (opening a model, draining one): it
  // runs on the long-call thread, never on a gRPC callback thread.
  template <typename Request>
  grpc::ServerUnaryReactor* OnLongCallThread(grpc::CallbackServerContext* context, const Request& request,
                                             bool unload) {
    grpc::Status checked = CheckRepositoryRequest(request, unload);
    if (!checked.ok()) return Finished(context, checked);
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    long_calls_.Post([this, reactor, unload, model = request.model_name()] {
      reactor->Finish(ToGrpc(unload ? server_.Unload(model) : server_.Load(model)));
    });
    return reactor;
  }

  static grpc::ServerUnaryReactor* Finished(grpc::CallbackServerContext* context, const grpc::Status& status) {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(status);
    return reactor;
  }

  InferenceServer& server_;
  LongCallThread long_calls_;
  GenerateStreamReactor::Registry streams_;
};

// gRPC's default health service reports what it is told; this keeps it telling
// InferenceServer::Ready() for the whole server ("") and for the inference
// service by name, pushed as readiness changes (models load and unload, the
// server begins to drain) so probes see NOT_SERVING while requests finish.
class HealthReporter {
 public:
  HealthReporter(InferenceServer& server, grpc::HealthCheckServiceInterface* health)
      : server_(server), health_(health) {
    // Observed before the first report, so no change falls between the two.
    observer_ = server_.AddReadinessObserver([this] { Report(); });
    Report();
  }
  ~HealthReporter() {
    server_.RemoveReadinessObserver(observer_);  // waits for a report in progress
    // NOT_SERVING from now on, whatever is set later.
    if (health_ != nullptr) health_->Shutdown();
  }

 private:
  // On the thread that changed readiness: observers run without the server's
  // state lock, so Ready() can be read here. Serialized, so the last report
  // is the latest state.
  void Report() {
    std::lock_guard lock(mutex_);
    const bool ready = server_.Ready();
    if (reported_ == ready) return;
    reported_ = ready;
    if (health_ == nullptr) return;
    health_->SetServingStatus("", ready);
    health_->SetServingStatus(inference::GRPCInferenceService::service_full_name(), ready);
  }

  InferenceServer& server_;
  grpc::HealthCheckServiceInterface* health_;
  std::mutex mutex_;
  std::optional<bool> reported_;  // under mutex_
  int observer_ = -1;
};

class GrpcFrontend final : public Frontend {
 public:
  explicit GrpcFrontend(InferenceServer& server) : server_(server), service_(server) {}
  ~GrpcFrontend() override { Stop(); }

  const char* Protocol() const override { return "grpc"; }

  Result<int> Start(const std::string& host, int port) override {
    std::lock_guard lock(mutex_);
    if (grpc_server_) return FailedPrecondition("the gRPC frontend is already listening");
    // IPv6 literals need brackets in a gRPC address.
    const bool ipv6 = host.find(':') != std::string::npos && host.front() != '[';
    const std::string address = (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);

    grpc::EnableDefaultHealthCheckService(true);
    grpc::ServerBuilder builder;
    int selected_port = 0;
    builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &selected_port);
    builder.RegisterService(&service_);
    // Real tensors, not gRPC's 4 MiB default; replies are at most as large.
    const int max_message = static_cast<int>(std::min<size_t>(server_.options().max_request_bytes, INT_MAX));
    builder.SetMaxReceiveMessageSize(max_message);
    builder.SetMaxSendMessageSize(max_message);
    // Without this Linux lets a second server share the port and Start would
    // succeed on a port another process serves.
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);

    std::unique_ptr<grpc::Server> grpc_server = builder.BuildAndStart();
    if (!grpc_server || selected_port == 0) {
      if (grpc_server) grpc_server->Shutdown();
      return Unavailable("gRPC cannot listen on " + address +
                         " (port in use, or the host is not an address of this machine)");
    }
    health_ = std::make_unique<HealthReporter>(server_, grpc_server->GetHealthCheckService());
    grpc_server_ = std::move(grpc_server);
    return selected_port;
  }

  void Stop() override {
    std::lock_guard lock(mutex_);
    if (!grpc_server_) return;
    health_.reset();  // NOT_SERVING (already so when the server drained first)
    // New calls are refused at once; calls in flight get kShutdownGrace to
    // finish before they are cancelled; open token streams end with their
    // generations.
    service_.streams().EndAllWhenIdle();
    grpc_server_->Shutdown(std::chrono::system_clock::now() + kShutdownGrace);
    grpc_server_->Wait();
    grpc_server_.reset();
  }

 private:
  // Kubernetes' default terminationGracePeriodSeconds.
  static constexpr auto kShutdownGrace = std::chrono::seconds(30);

  InferenceServer& server_;
  InferenceService service_;
  std::mutex mutex_;
  std::unique_ptr<grpc::Server> grpc_server_;
  std::unique_ptr<HealthReporter> health_;
};

}  // namespace

std::unique_ptr<Frontend> MakeGrpcFrontend(InferenceServer& server) { return std::make_unique<GrpcFrontend>(server); }

}  // namespace hetrt::serve
