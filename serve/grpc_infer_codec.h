// ModelInferRequest/ModelInferResponse (the Open Inference Protocol's gRPC
// messages) to and from the serving core's InferRequest/InferResponse.
#pragma once

#include "grpc_service.pb.h"
#include "hetrt/serve/inference.h"

namespace hetrt::serve {

// Validates and converts a request: inputs from their typed `contents` or from
// `raw_input_contents` (never both), sizes checked against shape x datatype.
// Errors are InvalidArgument and name the input. Inputs from
// raw_input_contents borrow `request`'s bytes: it must outlive the result.
Result<InferRequest> DecodeInferRequest(const inference::ModelInferRequest& request);

// Fills `out` with the response's outputs (name, datatype, shape) and their data
// as raw_output_contents, one entry per output.
Status EncodeInferResponse(const InferResponse& response, inference::ModelInferResponse& out);

}  // namespace hetrt::serve
