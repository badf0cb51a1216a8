// The Open Inference Protocol's REST bodies (KServe v2 JSON, with Triton's
// binary tensor data extension) to and from the serving core's types. Pure
// functions over bytes: no sockets, so every path is unit-tested and fuzzed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hetrt/serve/inference.h"

namespace hetrt::serve {

// How a response returns each output: as JSON "data" or as binary bytes after
// the JSON (the binary tensor data extension).
struct RestOutputFormat {
  // The request's "binary_data_output" parameter: every output binary unless
  // the output's own "binary_data" parameter says otherwise.
  bool binary_by_default = false;
  // Requested outputs that set "binary_data" themselves.
  std::vector<std::pair<std::string, bool>> per_output;

  bool IsBinary(std::string_view output) const;
};

struct RestInferRequest {
  InferRequest request;  // model and version stay empty: they come from the URL
  RestOutputFormat output_format;
};

struct RestParseLimits {
  // Deepest JSON nesting accepted (a tensor's nested data adds its rank).
  size_t max_json_depth = 64;
  // Largest total of decoded input bytes; a JSON element never decodes to more
  // than 4x its text, binary bytes to themselves, so the HTTP body limit bounds
  // this already: it keeps a caller without one (the fuzzer) bounded too.
  uint64_t max_input_bytes = uint64_t{1} << 32;
};

// Parses an inference request body. `json_header_length` is the
// Inference-Header-Content-Length header: the JSON is the body's first N bytes
// and the inputs with parameters.binary_data_size take the rest, in input
// order. Without it the whole body is JSON. Every error is InvalidArgument (or
// DataLoss for malformed JSON) naming the input and what was expected.
// How the binary inputs hold their bytes: a copy of them, or a view of `body`
// where it is aligned to kTensorAlignment (a copy elsewhere). A view's body
// must outlive the request: the REST frontend places the body so that the
// binary data is aligned and keeps it until the request has run (every
// executor copies an input into its own storage, so a large input is copied
// once instead of twice).
enum class BinaryInputs { kCopied, kViewOfBody };
Result<RestInferRequest> ParseRestInferRequest(std::string_view body, std::optional<size_t> json_header_length,
                                               const RestParseLimits& limits = {},
                                               BinaryInputs binary_inputs = BinaryInputs::kCopied);

// A response body; `json_header_length` set when binary outputs follow the JSON
// (the Inference-Header-Content-Length header to send).
struct RestBody {
  std::string body;
  std::optional<size_t> json_header_length;
  // With BinaryOutputs::kViewOfResponse: the binary outputs, in order, as
  // views of the response's tensors; the body is `body` and then these.
  std::vector<std::string_view> binary_outputs;
};

// Binary outputs copied after the JSON, or left in the response's tensors
// for a writer that sends them from there (the caller keeps the response).
enum class BinaryOutputs { kAppended, kViewOfResponse };

// {"model_name", "model_version", "id" (when not empty), "outputs": [{"name",
// "datatype", "shape", "data" | "parameters": {"binary_data_size"}}]}, binary
// outputs appended in order. JSON cannot hold NaN or infinity: an output with
// one, asked for as JSON, is an InvalidArgument error that says to ask for it
// as binary (silently switching to binary would break a client that parses
// only JSON; a string such as "NaN" is no JSON number either).
Result<RestBody> EncodeRestInferResponse(const InferResponse& response, const RestOutputFormat& format,
                                         BinaryOutputs binary_outputs = BinaryOutputs::kAppended);

// GET /v2: {"name", "version", "extensions"}.
std::string EncodeServerMetadata(const std::string& name, const std::string& version,
                                 const std::vector<std::string>& extensions);
// GET /v2/models/{m}: {"name", "versions", "platform", "inputs", "outputs"}.
std::string EncodeModelMetadata(const ModelMetadata& metadata);
// POST /v2/repository/index: [{"name", "version", "state", "reason"}]; version
// and reason only when not empty (the protocol marks them optional).
std::string EncodeRepositoryIndex(const std::vector<RepositoryEntry>& entries);
// {"error": "..."}
std::string EncodeError(std::string_view message);

// The body of POST /v2/repository/index: empty, or {"ready": bool}. Returns
// whether only ready models are asked for.
Result<bool> ParseRepositoryIndexRequest(std::string_view body);
// The body of .../load and .../unload: empty, or an object whose "parameters"
// hetrt does not need; a configuration or file override is refused (hetrt
// reads the model's folder in the repository).
Status ParseRepositoryModelRequest(std::string_view body);

}  // namespace hetrt::serve
