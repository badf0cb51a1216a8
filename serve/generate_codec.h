// Triton's generate extension in JSON (docs/serving-llm.md): the request body
// of POST .../generate and .../generate_stream, the whole answer, and the
// Server-Sent Events of a stream. No server libraries: the fuzzers link it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "hetrt/serve/generation.h"

namespace hetrt::serve {

// The body's inputs and parameters (top level or in "parameters"); the model
// and version are the route's. Errors (InvalidArgument, DataLoss) name the field.
Result<GenerateRequest> ParseGenerateRequest(std::string_view body);

// What every answer of one request starts with:
// {"model_name":"m","model_version":"1","id":"r",   (id when the request had one)
std::string GenerateAnswerPrefix(std::string_view model, std::string_view version, std::string_view id);

// The whole generation: prefix + "output_ids":[...],"finish_reason":...,"usage":{...}}
std::string EncodeGenerateAnswer(std::string_view prefix, std::span<const int32_t> output_ids,
                                 const GenerationEvent& end);

// One Server-Sent Event ("data: {...}\n\n") for a kToken or kEnd event,
// appended to `out`.
void AppendGenerateStreamEvent(std::string& out, std::string_view prefix, const GenerationEvent& event);

}  // namespace hetrt::serve
