// Generation requests to a served language model (docs/serving-llm.md), as the
// frontends hand them to the InferenceServer: a prompt and the settings it
// gave, answered by a stream of events from the model's scheduler thread.
// Independent of any wire format: REST's generate extension and gRPC's
// ModelStreamInfer both decode into this.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "hetrt/base/status.h"

namespace hetrt::serve {

struct GenerateRequest {
  std::string model;
  std::string version;  // "" for the version the server picks
  std::string id;       // echoed in every event
  std::vector<int32_t> input_ids;
  // What the request set; the model's defaults (config.json) fill the rest.
  std::optional<int64_t> max_tokens;
  std::optional<double> temperature, top_p, repetition_penalty, presence_penalty, frequency_penalty;
  std::optional<int64_t> top_k;
  std::optional<uint64_t> seed;
  std::vector<int32_t> stop_token_ids;  // added to the model's
};

// The generation parameters a request may carry, by name, with their
// protocol datatype: what metadata lists and what the decoders accept.
struct GenerationParameter {
  const char* name;
  const char* datatype;
};
const std::vector<GenerationParameter>& GenerationParameters();

// Finish reasons a generation ends with.
inline constexpr const char* kFinishLength = "length";  // max_tokens reached
inline constexpr const char* kFinishStop = "stop";      // a stop token (the last id sent)
inline constexpr const char* kFinishCancelled = "cancelled";
inline constexpr const char* kFinishShutdown = "shutdown";  // the server stopped it
inline constexpr const char* kFinishError = "error";

struct GenerationEvent {
  enum class Kind {
    kAdmitted,  // the request has its KV-cache pages: tokens follow
    kToken,     // one generated token
    kEnd,       // the last event: `finish_reason`, and the last token when it brought the end
    kRefused,   // the last event of a request never admitted: `status` says why (503)
  } kind = Kind::kToken;
  int32_t token = -1;                                // kToken; kEnd when >= 0
  const char* finish_reason = "";                    // kEnd
  Status status = OkStatus();                        // kRefused; kEnd with "shutdown" or "error": what happened
  int64_t prompt_tokens = 0, completion_tokens = 0;  // kEnd
  int64_t model_version = 0;                         // the version that serves the request
};

// Called on the model's scheduler thread, one event at a time per request,
// kAdmitted first, then tokens, then exactly one kEnd or kRefused. It must
// not block: it hands the event to the frontend's own thread or writer.
using GenerationSink = std::function<void(const GenerationEvent&)>;

// A started generation: what a frontend keeps to cancel it (its client left).
class Generation {
 public:
  virtual ~Generation() = default;
  // Ends the request at the next step boundary (its pages return to the
  // cache before the next decode step); its sink then gets kEnd "cancelled"
  // (or kRefused when it was still queued). Idempotent, any thread.
  virtual void Cancel() = 0;
  // The version of the model that serves it (a request may leave it to the server).
  virtual int64_t model_version() const = 0;
};

}  // namespace hetrt::serve
