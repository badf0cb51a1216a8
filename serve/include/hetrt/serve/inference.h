// What the serving core and its frontends (REST, gRPC) exchange: requests,
// responses and metadata in the Open Inference Protocol's terms, independent of
// any wire format. Tensors are host tensors (little-endian, row-major).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hetrt/base/status.h"
#include "hetrt/base/tensor.h"

namespace hetrt::serve {

// The protocol's datatype names: BOOL, UINT8..UINT64, INT8..INT64, FP16, FP32,
// FP64, BF16 (BYTES has no DLPack type: a model input of BYTES cannot exist here).
std::optional<DLDataType> DataTypeFromProtocol(std::string_view name);
// "" for a DLDataType the protocol cannot name.
std::string ProtocolDataType(DLDataType dtype);

// One option of one plugin ("cpu", "num_threads", "1"): config.json's
// parameters name them "cpu.num_threads" (Triton's form).
struct PluginSetting {
  std::string plugin;  // the plugin's name, as `hetrt plugins` lists it
  std::string key;
  std::string value;
  bool operator==(const PluginSetting&) const = default;
};

struct TensorMetadata {
  std::string name;
  std::string datatype;        // protocol name
  std::vector<int64_t> shape;  // -1 for the batch dimension the server batches
};

struct ModelMetadata {
  std::string name;
  std::vector<std::string> versions;  // the versions served
  std::string platform;               // "hetrt_graph", "hetrt_aot", "hetrt_mlf"
  std::vector<TensorMetadata> inputs, outputs;
  // A language model (docs/serving-llm.md): REST's metadata adds "parameters"
  // with "generative": true and these facts (vocab_size, context_window, ...).
  bool generative = false;
  std::vector<std::pair<std::string, int64_t>> generative_facts = {};
};

struct InferTensor {
  std::string name;
  Tensor tensor;  // host memory; its dtype and shape are the request's
};

struct InferRequest {
  std::string model;
  std::string version;  // "" for the version the server picks
  std::string id;       // echoed in the response
  std::vector<InferTensor> inputs;
  // Names of the outputs to return; empty: all of them.
  std::vector<std::string> outputs;
};

struct InferResponse {
  std::string model;
  std::string version;
  std::string id;
  std::vector<InferTensor> outputs;  // output_<i>, in the order requested
};

// Receives one request's response (or its error), exactly once.
using InferDone = std::function<void(Result<InferResponse>)>;

// One row of the repository index (the repository extension).
struct RepositoryEntry {
  std::string name;
  std::string version;  // "" when no version loaded
  std::string state;    // "READY", "UNAVAILABLE", "LOADING", "UNLOADING"
  std::string reason;   // why not ready
};

// Protocol error mapping shared by the frontends: kInvalidArgument/kOutOfRange/
// kDataLoss -> 400 / INVALID_ARGUMENT, kNotFound -> 404 / NOT_FOUND,
// kUnavailable/kResourceExhausted -> 503 / UNAVAILABLE, others -> 500 / INTERNAL.
int HttpStatusOf(const Status& status);

}  // namespace hetrt::serve
