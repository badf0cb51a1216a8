// The KServe v2 REST API and the Prometheus endpoint over cpp-httplib: routes
// and HTTP concerns only; bodies are rest_codec's, the work the InferenceServer's.
#include <httplib.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>

#include "generate_codec.h"
#include "generation_relay.h"
#include "hetrt/serve/frontend.h"
#include "http_server.h"
#include "rest_codec.h"

namespace hetrt::serve {
namespace {

// A client that makes no progress for this long while sending a request or
// reading a response loses its worker. It also bounds how long Stop waits for
// such a client, so it stays well inside Kubernetes' default 30 s grace period.
constexpr time_t kReadWriteTimeoutSeconds = 10;
// Idle keep-alive connections close after this; the request count per
// connection is practically unbounded.
constexpr time_t kKeepAliveSeconds = 5;
// How long Stop lets open connections finish by themselves (a stop closes
// idle ones at once, and a connection waiting for its next request within a
// second).
constexpr auto kStopGrace = std::chrono::seconds(kKeepAliveSeconds + 1);
constexpr size_t kKeepAliveMaxRequests = 1u << 30;

void SetBody(httplib::Response& res, int status, std::string body, const char* content_type) {
  res.status = status;
  res.body = std::move(body);  // set_content would copy it
  res.set_header("Content-Type", content_type);
}

void SendJson(httplib::Response& res, int status, std::string body) {
  SetBody(res, status, std::move(body), "application/json");
}

void SendError(httplib::Response& res, const Status& status) {
  SendJson(res, HttpStatusOf(status), EncodeError(status.message()));
}

// Where a body placed in a buffer at `base` (with kTensorAlignment bytes to
// spare) starts so that its byte `aligned_byte` (where the binary inputs
// begin) lies on a kTensorAlignment boundary: the inputs can then be used in
// place. 0 without `aligned_byte`.
size_t AlignedStart(const char* base, const size_t* aligned_byte) {
  if (aligned_byte == nullptr) return 0;
  const uintptr_t at = reinterpret_cast<uintptr_t>(base) + *aligned_byte;
  return static_cast<size_t>((kTensorAlignment - at % kTensorAlignment) % kTensorAlignment);
}

// Makes room in `*body` for `length` bytes (never reallocated after: views of
// it stay valid) and returns where they start (AlignedStart).
size_t PlaceBody(std::string* body, size_t length, const size_t* aligned_byte) {
  body->reserve(length + (aligned_byte ? kTensorAlignment : 0));
  const size_t pad = AlignedStart(body->data(), aligned_byte);
  body->assign(pad, '\0');
  return pad;
}

// Reads the request body, at most `limit` bytes, into `*body` from `*start` on;
// false once `res` holds the error. A larger Content-Length is skipped by
// httplib and answered 413 here; a chunked body ends when it passes the limit.
// With `aligned_byte` and `start` and a Content-Length, the body is placed so
// that its byte `aligned_byte` (where the binary inputs begin) lies on a
// kTensorAlignment boundary: the inputs can then be used in place.
bool ReadBody(const httplib::Request& req, const httplib::ContentReader& reader, size_t limit, std::string* body,
              httplib::Response& res, const size_t* aligned_byte = nullptr, size_t* start = nullptr) {
  if (start != nullptr) *start = 0;
  const bool has_length = req.has_header("Content-Length");
  // HTTP/1.1: without Content-Length or Transfer-Encoding there is no body
  // (httplib would wait for the client to close instead).
  if (!has_length && !req.has_header("Transfer-Encoding")) return true;
  bool too_large = has_length && req.get_header_value<uint64_t>("Content-Length") > limit;
  size_t pad = 0;
  if (has_length && !too_large) {
    pad = PlaceBody(body, static_cast<size_t>(req.get_header_value<uint64_t>("Content-Length")),
                    start != nullptr ? aligned_byte : nullptr);
    if (start != nullptr) *start = pad;
  }
  const bool ok = reader([&](const char* data, size_t size) {
    if (size > limit - (body->size() - pad)) {
      too_large = true;
      return false;
    }
    body->append(data, size);
    return true;
  });
  if (too_large) {
    SendJson(res, 413, EncodeError("request body larger than " + std::to_string(limit) + " bytes"));
    HttpServer::CloseAfterResponse(res);
    return false;
  }
  if (!ok) {
    SendError(res, InvalidArgument("the request body ended early (client disconnected or timed out)"));
    HttpServer::CloseAfterResponse(res);
    return false;
  }
  return true;
}

constexpr const char* kJsonHeaderLength = "Inference-Header-Content-Length";

// The binary extension's Inference-Header-Content-Length, when `present`.
Result<std::optional<size_t>> JsonHeaderLength(bool present, std::string_view text) {
  if (!present) return std::optional<size_t>();
  size_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size())
    return InvalidArgument(std::string(kJsonHeaderLength) + " must be a byte count, not '" + std::string(text) + "'");
  return std::optional<size_t>(value);
}

// What an infer request is answered with, on either path.
struct InferAnswer {
  int status = 200;
  const char* content_type = "application/json";
  std::string body;
  std::optional<size_t> json_header_length;  // binary outputs follow the JSON
  ReplyTail binary_outputs;                  // the fast path's: sent from the response's tensors
};

InferAnswer ErrorAnswer(const Status& status) {
  return {HttpStatusOf(status), "application/json", EncodeError(status.message()), std::nullopt, {}};
}

InferAnswer AnswerOf(const Result<InferResponse>& response, const RestOutputFormat& format) {
  if (!response.ok()) return ErrorAnswer(response.status());
  auto encoded = EncodeRestInferResponse(*response, format);
  if (!encoded.ok()) return ErrorAnswer(encoded.status());
  if (!encoded->json_header_length) return {200, "application/json", std::move(encoded->body), std::nullopt, {}};
  return {200, "application/octet-stream", std::move(encoded->body), encoded->json_header_length, {}};
}

// The same, with binary outputs left in the response's tensors: the writer
// sends them from there, and the answer keeps the response until it has.
InferAnswer ViewedAnswerOf(Result<InferResponse> response, const RestOutputFormat& format) {
  if (!response.ok()) return ErrorAnswer(response.status());
  auto kept = std::make_shared<const InferResponse>(std::move(*response));
  auto encoded = EncodeRestInferResponse(*kept, format, BinaryOutputs::kViewOfResponse);
  if (!encoded.ok()) return ErrorAnswer(encoded.status());
  if (!encoded->json_header_length) return {200, "application/json", std::move(encoded->body), std::nullopt, {}};
  return {200, "application/octet-stream", std::move(encoded->body), encoded->json_header_length,
          ReplyTail{std::move(encoded->binary_outputs), std::move(kept)}};
}

// {model, version} of "/v2/models/{m}[/versions/{v}]" + `suffix` (a route:
// "/infer") as httplib's route matches it; nothing for a target with escapes
// or a query, which httplib decodes.
std::optional<std::pair<std::string_view, std::string_view>> ModelTarget(std::string_view target,
                                                                         std::string_view suffix) {
  constexpr std::string_view kPrefix = "/v2/models/", kVersions = "/versions/";
  if (target.size() <= kPrefix.size() + suffix.size() || !target.starts_with(kPrefix) || !target.ends_with(suffix) ||
      target.find_first_of("%?#") != std::string_view::npos)
    return std::nullopt;
  const std::string_view path = target.substr(kPrefix.size(), target.size() - kPrefix.size() - suffix.size());
  const size_t slash = path.find('/');
  const std::string_view model = path.substr(0, slash);
  if (model.empty()) return std::nullopt;
  if (slash == std::string_view::npos) return std::pair{model, std::string_view()};
  const std::string_view rest = path.substr(slash);
  if (!rest.starts_with(kVersions)) return std::nullopt;
  const std::string_view version = rest.substr(kVersions.size());
  if (version.empty() || version.find('/') != std::string_view::npos) return std::nullopt;
  return std::pair{model, version};
}

// How often a handler waiting for a generation's next event looks whether
// its client is still there (a client that left cancels its request).
constexpr auto kClientCheck = std::chrono::milliseconds(50);

// One httplib server accepting on its own thread; subclasses add the routes.
class HttpListener : public Frontend {
 public:
  HttpListener(size_t max_request_bytes, size_t max_connections)
      : http_(HttpServer::Limits{max_connections, std::chrono::seconds(kKeepAliveSeconds),
                                 std::chrono::seconds(kReadWriteTimeoutSeconds), kKeepAliveMaxRequests}),
        max_request_bytes_(max_request_bytes) {
    http_.set_payload_max_length(max_request_bytes);
    http_.set_tcp_nodelay(true);  // a response is several writes: no Nagle delay between them
    // The listening socket, kept for a graceful Stop (httplib gives it to this
    // hook when it creates it; accepted sockets do not pass through here).
    http_.set_socket_options([this](socket_t sock) {
      httplib::default_socket_options(sock);
      if (binding_) listen_fd_ = sock;
    });
    // A request larger than the limit is refused before its body is sent.
    http_.set_expect_100_continue_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (req.has_header("Content-Length") && req.get_header_value<uint64_t>("Content-Length") > max_request_bytes_)
        return res.status = 413;
      return 100;
    });
  }
  ~HttpListener() override { Stop(); }

  Result<int> Start(const std::string& host, int port) override {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::string address = host + ":" + std::to_string(port);
    if (thread_.joinable()) return FailedPrecondition(std::string(Protocol()) + " is already listening");
    // A client that closes its socket while a response is written must not
    // end the process with SIGPIPE (httplib sends without MSG_NOSIGNAL).
    std::signal(SIGPIPE, SIG_IGN);
    binding_ = true;
    listen_fd_ = -1;
    const int bound = port == 0 ? http_.bind_to_any_port(host) : (http_.bind_to_port(host, port) ? port : -1);
    binding_ = false;
    // httplib 0.11 listens with a backlog of 5: sixteen clients connecting at
    // once overflow it, and a connection whose handshake the kernel then drops
    // never gets its answer. listen() again on a listening socket only resizes
    // the backlog.
    if (bound >= 0 && listen_fd_ >= 0) ::listen(listen_fd_, SOMAXCONN);
    if (bound < 0)
      return Unavailable(std::string(Protocol()) + ": cannot listen on " + address +
                         " (port in use, or no such address on this machine)");
    listen_returned_ = false;
    thread_ = std::thread([this] {
      http_.listen_after_bind();
      listen_returned_ = true;
    });
    while (!http_.is_running()) {
      if (listen_returned_) {
        thread_.join();
        return Unavailable(std::string(Protocol()) + ": listening on " + address + " failed");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return bound;
  }

  // Stops accepting, then lets every accepted connection finish. Shutting the
  // listening socket down ends httplib's accept loop (which closes the socket
  // itself); connections then answer what their clients send, and idle ones
  // close (http_server.h), after which listen_after_bind returns. A client
  // that keeps sending on its connection (retrying the 503s of a draining
  // server, say) would hold that forever: past kStopGrace each connection
  // closes after the request it is serving. httplib's own stop() is only for
  // a listening socket this class never saw: it would close that socket a
  // second time (its number may belong to another file by then) and make
  // connections accepted but not yet read close without an answer.
  void Stop() override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!thread_.joinable()) return;
    if (listen_fd_ >= 0) {
      ::shutdown(listen_fd_, SHUT_RDWR);
      const auto deadline = std::chrono::steady_clock::now() + kStopGrace;
      while (!listen_returned_ && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      if (!listen_returned_) http_.EndConnections();
    } else {
      http_.stop();
    }
    thread_.join();
    listen_fd_ = -1;
  }

 protected:
  HttpServer http_;  // connections parked while idle, bounded (http_server.h)
  const size_t max_request_bytes_;

 private:
  std::mutex mutex_;
  std::thread thread_;
  std::atomic<bool> listen_returned_{false};
  bool binding_ = false;  // Start is binding: the next socket httplib creates is the listening one
  socket_t listen_fd_ = -1;
};

// Fills the body of errors httplib answers itself (no route, 413, bad HTTP)
// in the form each listener speaks; a body a handler set is left alone.
template <typename MakeBody>
void OnHttplibErrors(httplib::Server& http, size_t max_request_bytes, MakeBody make_body) {
  http.set_error_handler(httplib::Server::HandlerWithResponse([=](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    // After a body too large or a malformed request, what the connection
    // holds next is no request's start.
    if (res.status == 413 || res.status == 400) HttpServer::CloseAfterResponse(res);
    std::string message;
    switch (res.status) {
      case 404: message = "no route for " + req.method + " " + req.path; break;
      case 413: message = "request body larger than " + std::to_string(max_request_bytes) + " bytes"; break;
      case 400: message = "malformed HTTP request"; break;
      default: message = "HTTP status " + std::to_string(res.status); break;
    }
    make_body(res, message);
    return httplib::Server::HandlerResponse::Handled;
  }));
  http.set_exception_handler([=](const httplib::Request&, httplib::Response& res, std::exception_ptr error) {
    std::string message = "internal error";
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      message += std::string(": ") + e.what();
    } catch (...) {
    }
    res.status = 500;
    make_body(res, message);
  });
}

class RestFrontend final : public HttpListener {
 public:
  explicit RestFrontend(InferenceServer& server)
      : HttpListener(server.options().max_request_bytes, server.options().max_connections), server_(server) {
    OnHttplibErrors(http_, max_request_bytes_, [](httplib::Response& res, const std::string& message) {
      SetBody(res, res.status, EncodeError(message), "application/json");
    });
    // Compressed bodies are refused: httplib would inflate them without any
    // limit (a small gzip body can expand to gigabytes).
    http_.set_pre_routing_handler([](const httplib::Request& req, httplib::Response& res) {
      const std::string encoding = req.get_header_value("Content-Encoding");
      if (encoding.empty() || encoding == "identity") return httplib::Server::HandlerResponse::Unhandled;
      SendJson(res, 415,
               EncodeError("Content-Encoding '" + encoding + "' is not supported; send the body uncompressed"));
      return httplib::Server::HandlerResponse::Handled;
    });
    AddRoutes();
    http_.AddFastRoute(&fast_infer_);
    http_.AddFastRoute(&fast_generate_);
  }
  // Handlers use this object's members: stop them before it goes.
  ~RestFrontend() override { Stop(); }
  const char* Protocol() const override { return "http"; }

 private:
  // {m} and an optional /versions/{v}: matches[1] and matches[2].
  static constexpr const char* kModel = R"(/v2/models/([^/]+)(?:/versions/([^/]+))?)";

  void AddRoutes() {
    using httplib::Request, httplib::Response, httplib::ContentReader;
    http_.Get("/v2", [this](const Request&, Response& res) {
      SendJson(res, 200, EncodeServerMetadata(server_.Name(), server_.Version(), server_.Extensions()));
    });
    http_.Get("/v2/health/live", [this](const Request&, Response& res) { res.status = server_.Live() ? 200 : 503; });
    http_.Get("/v2/health/ready", [this](const Request&, Response& res) { res.status = server_.Ready() ? 200 : 503; });
    http_.Get(kModel, [this](const Request& req, Response& res) {
      auto metadata = server_.Metadata(req.matches[1], req.matches[2]);
      if (!metadata.ok()) return SendError(res, metadata.status());
      SendJson(res, 200, EncodeModelMetadata(*metadata));
    });
    http_.Get(std::string(kModel) + "/ready", [this](const Request& req, Response& res) {
      auto ready = server_.ModelReady(req.matches[1], req.matches[2]);
      if (!ready.ok()) return SendError(res, ready.status());
      if (*ready) {
        res.status = 200;
      } else {
        // The protocol answers "not ready" with a 4xx status.
        SendJson(res, 400, EncodeError("model '" + req.matches[1].str() + "' is not ready"));
      }
    });
    http_.Post(std::string(kModel) + "/infer",
               [this](const Request& req, Response& res, const ContentReader& reader) { Infer(req, res, reader); });
    http_.Post(std::string(kModel) + "/generate",
               [this](const Request& req, Response& res, const ContentReader& reader) { Generate(req, res, reader); });
    http_.Post(
        std::string(kModel) + "/generate_stream",
        [this](const Request& req, Response& res, const ContentReader& reader) { GenerateStream(req, res, reader); });
    http_.Post("/v2/repository/index", [this](const Request& req, Response& res, const ContentReader& reader) {
      std::string body;
      if (!ReadBody(req, reader, max_request_bytes_, &body, res)) return;
      auto ready_only = ParseRepositoryIndexRequest(body);
      if (!ready_only.ok()) return SendError(res, ready_only.status());
      SendJson(res, 200, EncodeRepositoryIndex(server_.Index(*ready_only)));
    });
    http_.Post(R"(/v2/repository/models/([^/]+)/(load|unload))",
               [this](const Request& req, Response& res, const ContentReader& reader) {
                 std::string body;
                 if (!ReadBody(req, reader, max_request_bytes_, &body, res)) return;
                 Status status = ParseRepositoryModelRequest(body);
                 if (status.ok())
                   status = req.matches[2] == "load" ? server_.Load(req.matches[1]) : server_.Unload(req.matches[1]);
                 if (!status.ok()) return SendError(res, status);
                 res.status = 200;
               });
  }

  void Infer(const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) {
    // The header first: the body is placed by it. Its error comes after the
    // body is read, as every other error does.
    auto header_length = JsonHeaderLength(req.has_header(kJsonHeaderLength), req.get_header_value(kJsonHeaderLength));
    std::string body;
    size_t start = 0;
    const size_t* binary_at = header_length.ok() && header_length->has_value() ? &**header_length : nullptr;
    if (!ReadBody(req, reader, max_request_bytes_, &body, res, binary_at, &start)) return;
    if (!header_length.ok()) return SendError(res, header_length.status());
    // Binary inputs view `body` (placed so that they are aligned), which lives
    // until the request has run.
    auto parsed =
        ParseRestInferRequest(std::string_view(body).substr(start), *header_length, {}, BinaryInputs::kViewOfBody);
    if (!parsed.ok()) return SendError(res, parsed.status());
    InferRequest& request = parsed->request;
    request.model = req.matches[1];
    request.version = req.matches[2];
    auto response = server_.Infer(std::move(request));
    std::string().swap(body);  // nothing views it any more: not held while the response is encoded
    InferAnswer answer = AnswerOf(response, parsed->output_format);
    if (answer.json_header_length) res.set_header(kJsonHeaderLength, std::to_string(*answer.json_header_length));
    SetBody(res, answer.status, std::move(answer.body), answer.content_type);
  }

  // A 503 says when to come back (a full queue drains in about that).
  static void SendGenerateError(httplib::Response& res, const Status& status) {
    if (HttpStatusOf(status) == 503) res.set_header("Retry-After", "1");
    SendError(res, status);
  }

  // Reads and starts a generation; nullptr once `res` holds the error.
  std::shared_ptr<Generation> StartGeneration(const httplib::Request& req, httplib::Response& res,
                                              const httplib::ContentReader& reader,
                                              const std::shared_ptr<GenerationRelay>& relay, std::string* prefix) {
    std::string body;
    if (!ReadBody(req, reader, max_request_bytes_, &body, res)) return nullptr;
    auto parsed = ParseGenerateRequest(body);
    if (!parsed.ok()) {
      SendError(res, parsed.status());
      return nullptr;
    }
    parsed->model = req.matches[1];
    parsed->version = req.matches[2];
    const std::string id = parsed->id;
    auto started = server_.Generate(std::move(*parsed), [relay](const GenerationEvent& e) { relay->Push(e); });
    if (!started.ok()) {
      SendGenerateError(res, started.status());
      return nullptr;
    }
    *prefix = GenerateAnswerPrefix(req.matches[1].str(), std::to_string((*started)->model_version()), id);
    return std::move(*started);
  }

  // Waits for the generation's admission or end, the events so far appended
  // to `out`; false when the client (on socket `client`) left first.
  static bool AwaitEvents(GenerationRelay& relay, int client, std::vector<GenerationEvent>& out) {
    while (!relay.Take(out, kClientCheck))
      if (PeerClosed(client)) return false;
    return true;
  }

  // A whole answer, on either path: the answer's JSON once the generation
  // ends, or why it failed (a refusal, an error end); nothing when the client
  // left first (the request is the caller's to cancel).
  static std::optional<Result<std::string>> AwaitWholeAnswer(GenerationRelay& relay, int client,
                                                             std::string_view prefix) {
    std::vector<int32_t> ids;
    std::vector<GenerationEvent> batch;
    for (;;) {
      batch.clear();
      if (!AwaitEvents(relay, client, batch)) return std::nullopt;
      for (const GenerationEvent& e : batch) {
        if (e.token >= 0) ids.push_back(e.token);
        if (e.kind == GenerationEvent::Kind::kRefused) return Result<std::string>(e.status);
        if (e.kind != GenerationEvent::Kind::kEnd) continue;
        if (std::string_view(e.finish_reason) == kFinishError) return Result<std::string>(e.status);
        return Result<std::string>(EncodeGenerateAnswer(prefix, ids, e));
      }
    }
  }

  // POST .../generate: the whole generation in one answer.
  void Generate(const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) {
    auto relay = std::make_shared<GenerationRelay>();
    std::string prefix;
    std::shared_ptr<Generation> generation = StartGeneration(req, res, reader, relay, &prefix);
    if (generation == nullptr) return;
    auto answer = AwaitWholeAnswer(*relay, HttpServer::RequestSocket(), prefix);
    if (!answer) return generation->Cancel();
    if (!answer->ok()) return SendGenerateError(res, answer->status());
    SendJson(res, 200, std::move(**answer));
  }

  // POST .../generate_stream: Server-Sent Events, one per token. The answer
  // starts once the request is admitted, so that a refusal is still an HTTP
  // error (503 with Retry-After); from then on the scheduler sends each
  // token's event itself (generation_relay.h).
  void GenerateStream(const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) {
    auto relay = std::make_shared<GenerationRelay>();
    std::string prefix;
    std::shared_ptr<Generation> generation = StartGeneration(req, res, reader, relay, &prefix);
    if (generation == nullptr) return;
    std::vector<GenerationEvent> first;
    const int client = HttpServer::RequestSocket();
    if (!AwaitEvents(*relay, client, first)) return generation->Cancel();
    if (first.front().kind == GenerationEvent::Kind::kRefused) return SendGenerateError(res, first.front().status);
    res.set_header("Cache-Control", "no-cache");
    // (httplib never compresses text/event-stream, so the body's chunks are
    // the relay's, written straight to the socket.)
    res.set_chunked_content_provider(
        "text/event-stream",
        [relay, generation, client, prefix = std::move(prefix), first = std::move(first)](
            size_t, httplib::DataSink& sink) mutable {
          // httplib has sent the head: the relay writes the chunks from here on.
          if (!relay->Stream(client, std::move(prefix), first)) {
            generation->Cancel();
            return false;
          }
          for (;;) {
            switch (relay->Pump(kClientCheck, std::chrono::seconds(kReadWriteTimeoutSeconds))) {
              case GenerationRelay::Progress::kGoing: continue;
              case GenerationRelay::Progress::kEnded: sink.done(); return true;
              case GenerationRelay::Progress::kBroken: generation->Cancel(); return false;
            }
          }
        },
        // A stream httplib could not start (the head's write failed: the
        // client left) or ended in error: its request must not run on.
        [generation](bool success) {
          if (!success) generation->Cancel();
        });
  }

  // The infer route past httplib (HttpServer::FastRoute): the worker parses
  // and hands the request on; the thread that runs it writes the answer.
  class FastInfer final : public HttpServer::FastRoute {
   public:
    explicit FastInfer(InferenceServer& server) : server_(server) {}

    // (HttpServer offers only heads with a Content-Length within the payload
    // limit, which the constructor of HttpListener set to max_request_bytes.)
    bool Takes(const RequestHead& head) const override { return ModelTarget(head.target(), "/infer").has_value(); }

    bool Serve(const RequestHead& head, SocketStream& stream, HttpReply reply) override {
      const auto [model_view, version_view] = *ModelTarget(head.target(), "/infer");
      std::string model(model_view), version(version_view);
      auto header_length = JsonHeaderLength(head.Has(kJsonHeaderLength), head.Field(kJsonHeaderLength));
      const size_t length = static_cast<size_t>(*head.content_length());
      // Binary inputs view the body, which lives (at one address) until the
      // request has run. Not zeroed first: the socket fills every byte.
      const size_t* binary_at = header_length.ok() && header_length->has_value() ? &**header_length : nullptr;
      std::shared_ptr<char[]> body = std::make_shared_for_overwrite<char[]>(length + kTensorAlignment);
      const size_t start = AlignedStart(body.get(), binary_at);
      if (!stream.ReadFully(body.get() + start, length)) {
        // As httplib's path answers it; the connection then closes.
        const InferAnswer ended =
            ErrorAnswer(InvalidArgument("the request body ended early (client disconnected or timed out)"));
        reply.Send(ended.status, ended.content_type, ended.body, "Connection", "close");
        return false;
      }
      if (!header_length.ok()) return Send(reply, ErrorAnswer(header_length.status()));
      auto parsed = ParseRestInferRequest(std::string_view(body.get() + start, length), *header_length, {},
                                          BinaryInputs::kViewOfBody);
      if (!parsed.ok()) return Send(reply, ErrorAnswer(parsed.status()));
      parsed->request.model = std::move(model);
      parsed->request.version = std::move(version);
      // InferDone is a std::function, which copies: the reply is shared.
      auto answer_to = std::make_shared<HttpReply>(std::move(reply));
      server_.InferAsync(std::move(parsed->request), [body, answer_to, format = std::move(parsed->output_format)](
                                                         Result<InferResponse> response) mutable {
        body.reset();  // nothing views it any more
        Send(*answer_to, ViewedAnswerOf(std::move(response), format));
      });
      return true;
    }

   private:
    static bool Send(HttpReply& reply, InferAnswer answer) {
      const std::string length = answer.json_header_length ? std::to_string(*answer.json_header_length) : "";
      reply.Send(answer.status, answer.content_type, std::move(answer.body),
                 answer.json_header_length ? kJsonHeaderLength : "", length, std::move(answer.binary_outputs));
      return true;
    }

    InferenceServer& server_;
  };

  // The generate routes past httplib. A stream's relay writes the whole
  // response (generation_relay.h), the head with the first token and the
  // body's end with the last event, while the worker waits in Pump, woken at
  // the end or by the client leaving; a whole answer is collected as the
  // httplib route does. Serve returns once the response is out.
  class FastGenerate final : public HttpServer::FastRoute {
   public:
    explicit FastGenerate(InferenceServer& server) : server_(server) {}

    bool Takes(const RequestHead& head) const override {
      return ModelTarget(head.target(), kStream).has_value() || ModelTarget(head.target(), kWhole).has_value();
    }

    bool Serve(const RequestHead& head, SocketStream& stream, HttpReply reply) override {
      auto target = ModelTarget(head.target(), kStream);
      const bool streams = target.has_value();
      if (!streams) target = ModelTarget(head.target(), kWhole);
      std::string model(target->first), version(target->second);
      std::string body(static_cast<size_t>(*head.content_length()), '\0');
      if (!stream.ReadFully(body.data(), body.size())) {
        // As httplib's path answers it; the connection then closes.
        reply.Send(400, "application/json",
                   EncodeError("the request body ended early (client disconnected or timed out)"), "Connection",
                   "close");
        return false;
      }
      auto parsed = ParseGenerateRequest(body);
      if (!parsed.ok()) return Refuse(reply, parsed.status());
      parsed->model = model;
      parsed->version = version;
      const std::string id = parsed->id;
      auto relay = std::make_shared<GenerationRelay>();
      auto started = server_.Generate(std::move(*parsed), [relay](const GenerationEvent& e) { relay->Push(e); });
      if (!started.ok()) return Refuse(reply, started.status());
      const std::shared_ptr<Generation> generation = std::move(*started);
      // Whatever ends this call early (out of memory) cancels the request.
      struct CancelUnlessDone {
        Generation& generation;
        bool done = false;
        ~CancelUnlessDone() {
          if (!done) generation.Cancel();
        }
      } guard{*generation};
      std::string prefix = GenerateAnswerPrefix(model, std::to_string(generation->model_version()), id);
      if (!streams) {
        auto answer = AwaitWholeAnswer(*relay, stream.socket(), prefix);
        if (!answer) {
          reply.Wrote(false);  // the connection closes; the guard cancels the request
          return true;
        }
        guard.done = true;
        if (!answer->ok()) return Refuse(reply, answer->status());
        reply.Send(200, "application/json", std::move(**answer));
        return true;
      }
      if (!relay->Respond(stream.socket(), std::move(prefix)))
        return Refuse(reply, Unavailable("out of file descriptors: cannot watch the stream's client"));
      for (;;) {
        switch (relay->Pump(kClientCheck, std::chrono::seconds(kReadWriteTimeoutSeconds))) {
          case GenerationRelay::Progress::kGoing: continue;
          case GenerationRelay::Progress::kEnded:
            guard.done = true;
            reply.Wrote(true);
            return true;
          case GenerationRelay::Progress::kBroken:
            reply.Wrote(false);  // the connection closes; the guard cancels the request
            return true;
        }
      }
    }

   private:
    static constexpr std::string_view kStream = "/generate_stream", kWhole = "/generate";

    // An error answer as the httplib routes' (503s say when to come back).
    static bool Refuse(HttpReply& reply, const Status& status) {
      const int code = HttpStatusOf(status);
      reply.Send(code, "application/json", EncodeError(status.message()), code == 503 ? "Retry-After" : "",
                 code == 503 ? "1" : "");
      return true;
    }

    InferenceServer& server_;
  };

  InferenceServer& server_;
  FastInfer fast_infer_{server_};
  FastGenerate fast_generate_{server_};
};

class MetricsFrontend final : public HttpListener {
 public:
  explicit MetricsFrontend(InferenceServer& server)
      : HttpListener(server.options().max_request_bytes, server.options().max_connections), server_(server) {
    OnHttplibErrors(http_, max_request_bytes_, [](httplib::Response& res, const std::string& message) {
      SetBody(res, res.status, message + "\n", "text/plain; charset=utf-8");
    });
    http_.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      SetBody(res, 200, server_.MetricsText(), "text/plain; version=0.0.4; charset=utf-8");
    });
  }
  ~MetricsFrontend() override { Stop(); }
  const char* Protocol() const override { return "metrics"; }

 private:
  InferenceServer& server_;
};

}  // namespace

std::unique_ptr<Frontend> MakeRestFrontend(InferenceServer& server) { return std::make_unique<RestFrontend>(server); }

std::unique_ptr<Frontend> MakeMetricsFrontend(InferenceServer& server) {
  return std::make_unique<MetricsFrontend>(server);
}

}  // namespace hetrt::serve
