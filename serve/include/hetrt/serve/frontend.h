// A listener that speaks one wire protocol on top of the InferenceServer:
// REST (HTTP/1.1 + JSON, with the binary tensor extension), gRPC, or the
// Prometheus metrics endpoint.
#pragma once

#include <memory>
#include <string>

#include "hetrt/serve/inference_server.h"

namespace hetrt::serve {

class Frontend {
 public:
  virtual ~Frontend() = default;
  // "http", "grpc", "metrics": the word in the "listening on" line.
  virtual const char* Protocol() const = 0;
  // Binds HOST:PORT (port 0: a free one) and returns once connections are
  // accepted, with the port bound. Errors name the address.
  virtual Result<int> Start(const std::string& host, int port) = 0;
  // Stops accepting; requests already accepted finish first. Idempotent.
  virtual void Stop() = 0;
};

// The KServe v2 REST API (health, metadata, infer, repository extension).
std::unique_ptr<Frontend> MakeRestFrontend(InferenceServer& server);
// GET /metrics in Prometheus text format.
std::unique_ptr<Frontend> MakeMetricsFrontend(InferenceServer& server);
// inference.GRPCInferenceService and grpc.health.v1.Health.
std::unique_ptr<Frontend> MakeGrpcFrontend(InferenceServer& server);

}  // namespace hetrt::serve
