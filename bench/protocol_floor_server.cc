// The protocol floor: the fastest Open Inference Protocol server that the
// libraries hetrt serve uses can make without a model. It decodes each
// ModelInfer request (gRPC: the protobuf, on gRPC's callback API; REST: the
// JSON body, or the binary extension's JSON header and sizes, on cpp-httplib
// configured as hetrt's REST frontend is) and answers with a response made
// once at start for the model's outputs. bench/serve_load.py puts it beside
// `hetrt serve` under the same h2load runs: its throughput, latency and CPU per
// request are the denominators of hetrt's serving figures.
//
// Serves gRPC or REST (one floor process per protocol, so that neither's
// threads count against the other's CPU), or both.
// Usage: protocol_floor_server --model NAME --input-bytes N
//          --output NAME:DATATYPE:D0xD1x... [--output ...] [--grpc-port P] [--http-port Q]
#include <sys/socket.h>

#include <grpcpp/grpcpp.h>
#include <httplib.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "grpc_service.grpc.pb.h"
#include "hetrt/serve/process_tuning.h"

namespace {

struct OutputSpec {
  std::string name;
  std::string datatype;
  std::vector<int64_t> shape;
  size_t nbytes = 0;
};

size_t ElementBytes(const std::string& datatype) {
  if (datatype == "FP64" || datatype == "INT64" || datatype == "UINT64") return 8;
  if (datatype == "FP16" || datatype == "INT16" || datatype == "UINT16" || datatype == "BF16") return 2;
  if (datatype == "INT8" || datatype == "UINT8" || datatype == "BOOL") return 1;
  return 4;
}

OutputSpec ParseOutput(const std::string& text) {  // NAME:DATATYPE:D0xD1x...
  OutputSpec spec;
  const size_t a = text.find(':'), b = text.find(':', a + 1);
  if (a == std::string::npos || b == std::string::npos) throw CLI::ValidationError("--output", text);
  spec.name = text.substr(0, a);
  spec.datatype = text.substr(a + 1, b - a - 1);
  size_t elements = 1;
  for (size_t at = b + 1; at <= text.size();) {
    const size_t x = std::min(text.find('x', at), text.size());
    spec.shape.push_back(std::stoll(text.substr(at, x - at)));
    elements *= static_cast<size_t>(spec.shape.back());
    at = x + 1;
  }
  spec.nbytes = elements * ElementBytes(spec.datatype);
  return spec;
}

// gRPC: each call finishes on the thread gRPC runs it on, with a copy of the
// prepared response (the copy stands for writing the outputs, which any server
// must do).
class FloorService final : public inference::GRPCInferenceService::CallbackService {
 public:
  FloorService(std::string model, size_t input_bytes, inference::ModelInferResponse response)
      : model_(std::move(model)), input_bytes_(input_bytes), response_(std::move(response)) {}

  grpc::ServerUnaryReactor* ModelInfer(grpc::CallbackServerContext* context, const inference::ModelInferRequest* request,
                                       inference::ModelInferResponse* response) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    size_t received = 0;
    for (const std::string& raw : request->raw_input_contents()) received += raw.size();
    if (request->model_name() != model_) {
      reactor->Finish({grpc::StatusCode::NOT_FOUND, "unknown model '" + request->model_name() + "'"});
    } else if (received != input_bytes_) {
      reactor->Finish({grpc::StatusCode::INVALID_ARGUMENT,
                       "inputs hold " + std::to_string(received) + " bytes, expected " + std::to_string(input_bytes_)});
    } else {
      response->CopyFrom(response_);
      response->set_id(request->id());
      reactor->Finish(grpc::Status::OK);
    }
    return reactor;
  }

 private:
  std::string model_;
  size_t input_bytes_;
  inference::ModelInferResponse response_;
};

struct RestResponses {
  std::string json;         // the outputs as JSON numbers
  std::string binary;       // JSON header, then the outputs' bytes
  size_t binary_header = 0; // Inference-Header-Content-Length of `binary`
};

RestResponses MakeRestResponses(const std::string& model, const std::vector<OutputSpec>& outputs) {
  RestResponses r;
  nlohmann::json json{{"model_name", model}, {"model_version", "1"}, {"outputs", nlohmann::json::array()}};
  nlohmann::json header = json;
  std::string bytes;
  for (const OutputSpec& o : outputs) {
    const size_t count = o.nbytes / ElementBytes(o.datatype);
    json["outputs"].push_back(
        {{"name", o.name}, {"datatype", o.datatype}, {"shape", o.shape}, {"data", std::vector<float>(count, 0.5f)}});
    header["outputs"].push_back({{"name", o.name},
                                 {"datatype", o.datatype},
                                 {"shape", o.shape},
                                 {"parameters", {{"binary_data_size", o.nbytes}}}});
    bytes.append(o.nbytes, '\0');
  }
  r.json = json.dump();
  r.binary = header.dump();
  r.binary_header = r.binary.size();
  r.binary += bytes;
  return r;
}

// The request as hetrt's REST frontend must read it: the JSON document, or the
// binary extension's JSON header and the sizes it gives. Returns the bytes of
// input data it found, or -1 when the request does not parse.
int64_t DecodeRestRequest(const httplib::Request& req) {
  const std::string length = req.get_header_value("Inference-Header-Content-Length");
  const size_t header_size = length.empty() ? req.body.size() : std::stoul(length);
  if (header_size > req.body.size()) return -1;
  nlohmann::json header = nlohmann::json::parse(req.body.begin(), req.body.begin() + header_size, nullptr, false);
  if (header.is_discarded() || !header.contains("inputs")) return -1;
  int64_t data_bytes = 0;
  for (const auto& input : header["inputs"]) {
    if (length.empty()) {
      data_bytes += static_cast<int64_t>(input.at("data").size() * ElementBytes(input.at("datatype")));
    } else {
      data_bytes += input.at("parameters").at("binary_data_size").get<int64_t>();
    }
  }
  if (!length.empty() && static_cast<size_t>(data_bytes) != req.body.size() - header_size) return -1;
  return data_bytes;
}

}  // namespace

int main(int argc, char** argv) {
  hetrt::serve::KeepLargeBuffersForThisProcess();  // as hetrt serve does
  CLI::App app{"The Open Inference Protocol without a model: the floor hetrt serve is measured against"};
  std::string model;
  size_t input_bytes = 0;
  std::vector<std::string> output_texts;
  int grpc_port = 0, http_port = 0;
  app.add_option("--model", model, "the model name requests use")->required();
  app.add_option("--input-bytes", input_bytes, "bytes of input data a request carries")->required();
  app.add_option("--output", output_texts, "NAME:DATATYPE:D0xD1x... of each output")->required();
  app.add_option("--grpc-port", grpc_port, "serve gRPC on this port");
  app.add_option("--http-port", http_port, "serve REST on this port");
  CLI11_PARSE(app, argc, argv);
  sigset_t signals;  // before any thread starts, so that all inherit the mask
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::vector<OutputSpec> outputs;
  try {
    for (const std::string& text : output_texts) outputs.push_back(ParseOutput(text));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "protocol_floor_server: --output wants NAME:DATATYPE:D0xD1x...: %s\n", e.what());
    return 2;
  }

  inference::ModelInferResponse grpc_response;
  grpc_response.set_model_name(model);
  grpc_response.set_model_version("1");
  for (const OutputSpec& o : outputs) {
    auto* tensor = grpc_response.add_outputs();
    tensor->set_name(o.name);
    tensor->set_datatype(o.datatype);
    for (int64_t d : o.shape) tensor->add_shape(d);
    grpc_response.add_raw_output_contents(std::string(o.nbytes, '\0'));
  }
  FloorService service(model, input_bytes, std::move(grpc_response));
  std::unique_ptr<grpc::Server> grpc_server;
  if (grpc_port > 0) {
    hetrt::serve::SkipGrpcDeadlockChecksForThisProcess();  // as hetrt serve does
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:" + std::to_string(grpc_port), grpc::InsecureServerCredentials());
    builder.SetMaxReceiveMessageSize(64 << 20);
    builder.RegisterService(&service);
    grpc_server = builder.BuildAndStart();
    if (!grpc_server) {
      std::fprintf(stderr, "protocol_floor_server: cannot listen on gRPC port %d\n", grpc_port);
      return 1;
    }
  }

  const RestResponses rest = MakeRestResponses(model, outputs);
  httplib::Server http;
  // A worker per connection, for every connection the load generator opens:
  // h2load's 64 (and those of the run before, still closing) never wait for one.
  http.new_task_queue = [] { return new httplib::ThreadPool(256); };
  http.set_tcp_nodelay(true);
  http.set_keep_alive_max_count(1u << 30);
  http.Get("/v2/health/ready", [](const httplib::Request&, httplib::Response& res) { res.status = 200; });
  http.Post("/v2/models/" + model + "/infer", [&](const httplib::Request& req, httplib::Response& res) {
    const int64_t data_bytes = DecodeRestRequest(req);
    if (data_bytes != static_cast<int64_t>(input_bytes)) {
      res.status = 400;
      res.set_content("{\"error\":\"a request the floor does not expect\"}", "application/json");
      return;
    }
    if (req.has_header("Inference-Header-Content-Length")) {
      res.body = rest.binary;
      res.set_header("Content-Type", "application/octet-stream");
      res.set_header("Inference-Header-Content-Length", std::to_string(rest.binary_header));
    } else {
      res.body = rest.json;
      res.set_header("Content-Type", "application/json");
    }
    res.status = 200;
  });
  // httplib 0.11 listens with a backlog of 5: h2load's 16 or 64 connections
  // at once overflow it, and a connection whose handshake the kernel drops is
  // never answered. As hetrt's frontend does: listen() again on the bound
  // socket only resizes the backlog.
  socket_t listen_fd = INVALID_SOCKET;
  http.set_socket_options([&](socket_t sock) {
    httplib::default_socket_options(sock);
    listen_fd = sock;
  });
  std::thread rest_thread;
  if (http_port > 0) {
    if (!http.bind_to_port("127.0.0.1", http_port)) {
      std::fprintf(stderr, "protocol_floor_server: cannot listen on 127.0.0.1:%d\n", http_port);
      return 1;
    }
    ::listen(listen_fd, SOMAXCONN);
    rest_thread = std::thread([&] { http.listen_after_bind(); });
  }
  std::printf("protocol_floor_server: grpc 127.0.0.1:%d, http 127.0.0.1:%d, model '%s'\n", grpc_port, http_port,
              model.c_str());
  std::fflush(stdout);

  // Runs until SIGTERM or SIGINT (blocked in every thread, taken here).
  int received = 0;
  sigwait(&signals, &received);
  if (rest_thread.joinable()) {
    http.stop();
    rest_thread.join();
  }
  if (grpc_server) grpc_server->Shutdown();
  return 0;
}
