// A straight-line VM function's call replayed instead of interpreted.
//
// An LLM's decode step runs the same few hundred instructions for the same
// batch on every token, and interpreting them is most of what the runtime
// adds to the kernels' time. So a call whose signature repeats (each
// argument's kind; a tensor's device, dtype and shape; any other value
// itself, or the object it is) is recorded once: the memory it allocated
// stays pinned to the recording, each kernel keeps the argument array it was
// called with, the builtins that only check or build shapes, views, tuples
// and storage are dropped (the signature fixes their results), and stateful
// builtins (the KV cache's) keep the values they were called with. A later
// call of that signature calls the kernels and stateful builtins in order,
// with the tensor arguments rebound: the CPU analogue of replaying a CUDA
// graph.
//
// What the recording cannot vouch for is interpreted: a result of an earlier
// call still held by someone (replaying would overwrite it); a function that
// branches or calls another VM function (refused when replay is enabled);
// one that derives a value from a tensor argument's contents, uses a
// stateful builtin's result, or passes the shape heap to anything but shape
// functions (found while recording; replay is then off for the function,
// with the reason in its stats).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "hetrt/base/status.h"
#include "hetrt/relax/profile.h"
#include "hetrt/relax/value.h"
#include "relax/interpreter.h"

namespace hetrt {

class RelaxFunctionReplay final : public RelaxCallObserver {
 public:
  // An error naming the instruction when `function` branches or calls
  // another VM function. Keeps at most `max_signatures` recordings (the least
  // recently used one goes, with the memory it pinned).
  static Result<std::shared_ptr<RelaxFunctionReplay>> Create(const RelaxInterpreter& vm, uint32_t function,
                                                             size_t max_signatures);
  virtual ~RelaxFunctionReplay();
  RelaxFunctionReplay(const RelaxFunctionReplay&) = delete;
  RelaxFunctionReplay& operator=(const RelaxFunctionReplay&) = delete;

  // The call run from a recording of its signature; nullopt when there is
  // none or its results are still held (the caller interprets the call).
  std::optional<Result<RelaxValue>> Replay(RelaxInterpreter& vm, std::span<const RelaxValue> args);
  // Whether to record this (interpreted) call: one of the last few calls had
  // its signature, so it is likely to come again.
  bool ShouldRecord(std::span<const RelaxValue> args);
  // Recording: Begin before the interpreter runs the call, Observe after each
  // of its Call instructions (the interpreter does, at depth 0), Finish with
  // what the call returned.
  void BeginRecording(std::span<const RelaxValue> args);
  void Observe(const RelaxInterpreter& vm, uint32_t index, const RelaxInterpreter::Instruction& in,
               const RelaxValue& result) override;
  void FinishRecording(RelaxInterpreter& vm, const Result<RelaxValue>& result);

  const RelaxReplayStats& stats() const { return stats_; }

 private:
  enum class Role : uint8_t;
  struct ArgKey;
  struct Capture;
  struct InProgress;
  struct Recording;

  RelaxFunctionReplay(uint32_t function, uint32_t num_args, size_t max_signatures);
  Status Run(RelaxInterpreter& vm, Recording& r, std::span<const RelaxValue> args);
  void Abort(std::string why);

  uint32_t function_;
  uint32_t num_args_;
  size_t max_signatures_;
  std::vector<Role> roles_;            // per instruction of the function
  std::vector<uint32_t> first_write_;  // per argument register: the first instruction writing it
  std::vector<uint64_t> recent_;       // fingerprints of the last interpreted calls
  size_t recent_next_ = 0;
  bool held_ = false;  // the last Replay found its signature's recording held
  std::vector<std::unique_ptr<Recording>> recordings_;
  std::unique_ptr<InProgress> recording_;  // set between Begin and Finish
  uint64_t clock_ = 0;
  RelaxReplayStats stats_;
};

}  // namespace hetrt
