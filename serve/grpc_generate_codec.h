// Generation requests and their token responses on gRPC's ModelStreamInfer
// (Triton's decoupled mode, docs/serving-llm.md): a ModelInferRequest with the
// input_ids input and the generation settings as parameters (or as one-element
// inputs, as Triton's LLM backends take them) to a GenerateRequest, and each
// event to a ModelStreamInferResponse. Protobuf only: the fuzzers link it.
#pragma once

#include <string>

#include "grpc_service.pb.h"
#include "hetrt/serve/generation.h"

namespace hetrt::serve {

// Errors are InvalidArgument naming the input or parameter.
Result<GenerateRequest> DecodeGenerateRequest(const inference::ModelInferRequest& request);

// A kToken or kEnd event: output_ids INT32 [1] (or [0]) in raw_output_contents,
// and on kEnd the parameters finish_reason and triton_final_response = true
// (and "error" for a shutdown or a failure). A kRefused event: its status as
// error_message, with the model and the request's id.
void EncodeGenerateResponse(const GenerationEvent& event, const std::string& model, const std::string& version,
                            const std::string& id, inference::ModelStreamInferResponse& out);

}  // namespace hetrt::serve
