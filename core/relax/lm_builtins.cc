// The LM helpers' builtins, by TVM name (lm_support: sampling and penalties,
// docs/llm.md), over hetrt/relax/lm_support.h. Sampling reads its input on the
// host (a device tensor is copied there first, as TVM does); the penalties and
// the softmax write in place and so take host tensors only.
#include <array>

#include "hetrt/relax/lm_support.h"
#include "relax/builtin_args.h"
#include "relax/interpreter.h"

namespace hetrt {
namespace {

Result<Tensor> OnHost(RelaxInterpreter& vm, const Tensor& t) {
  if (t.device().device_type == kDLCPU) return t;
  HETRT_ASSIGN_OR_RETURN(Tensor copy, vm.CopyTo(t, static_cast<int>(vm.devices.size()) - 1));
  HETRT_RETURN_IF_ERROR(vm.SynchronizeDevices());
  return copy;
}

// sample_top_p_from_logits(logits, temperature, top_p, uniform) -> int
Status SampleFromLogits(RelaxInterpreter& vm, const RelaxCallArgs& args, RelaxValue* result) {
  HETRT_ASSIGN_OR_RETURN(const Tensor* logits, TensorArg(args, 0));
  HETRT_ASSIGN_OR_RETURN(double temperature, RealArg(args, 1));
  HETRT_ASSIGN_OR_RETURN(double top_p, RealArg(args, 2));
  HETRT_ASSIGN_OR_RETURN(double uniform, RealArg(args, 3));
  HETRT_ASSIGN_OR_RETURN(Tensor host, OnHost(vm, *logits));
  HETRT_ASSIGN_OR_RETURN(int64_t token, SampleTopPFromLogits(host, temperature, top_p, uniform));
  *result = RelaxValue::Int(token);
  return OkStatus();
}

// sample_top_p_from_prob(prob, top_p, uniform) -> int
Status SampleFromProb(RelaxInterpreter& vm, const RelaxCallArgs& args, RelaxValue* result) {
  HETRT_ASSIGN_OR_RETURN(const Tensor* prob, TensorArg(args, 0));
  HETRT_ASSIGN_OR_RETURN(double top_p, RealArg(args, 1));
  HETRT_ASSIGN_OR_RETURN(double uniform, RealArg(args, 2));
  HETRT_ASSIGN_OR_RETURN(Tensor host, OnHost(vm, *prob));
  HETRT_ASSIGN_OR_RETURN(int64_t token, SampleTopPFromProb(host, top_p, uniform));
  *result = RelaxValue::Int(token);
  return OkStatus();
}

// multinomial_from_uniform(prob (B, V), uniform (B, ...)) -> int64 (B, 1) on the host
Status Multinomial(RelaxInterpreter& vm, const RelaxCallArgs& args, RelaxValue* result) {
  HETRT_ASSIGN_OR_RETURN(const Tensor* prob, TensorArg(args, 0));
  HETRT_ASSIGN_OR_RETURN(const Tensor* uniform, TensorArg(args, 1));
  HETRT_ASSIGN_OR_RETURN(Tensor host_prob, OnHost(vm, *prob));
  HETRT_ASSIGN_OR_RETURN(Tensor host_uniform, OnHost(vm, *uniform));
  HETRT_ASSIGN_OR_RETURN(Tensor tokens, MultinomialFromUniform(host_prob, host_uniform));
  *result = RelaxValue::FromTensor(std::move(tokens));
  return OkStatus();
}

// apply_repetition_penalty(logits, token_ids, penalty), in place
Status RepetitionPenalty(RelaxInterpreter&, const RelaxCallArgs& args, RelaxValue* result) {
  HETRT_ASSIGN_OR_RETURN(const Tensor* logits, TensorArg(args, 0));
  HETRT_ASSIGN_OR_RETURN(const Tensor* ids, TensorArg(args, 1));
  HETRT_ASSIGN_OR_RETURN(double penalty, RealArg(args, 2));
  HETRT_RETURN_IF_ERROR(ApplyRepetitionPenalty(*logits, *ids, penalty));
  *result = RelaxValue();
  return OkStatus();
}

// apply_presence_and_frequency_penalty(logits, token_ids, token_freqs, presence, frequency), in place
Status PresenceFrequencyPenalty(RelaxInterpreter&, const RelaxCallArgs& args, RelaxValue* result) {
  HETRT_ASSIGN_OR_RETURN(const Tensor* logits, TensorArg(args, 0));
  HETRT_ASSIGN_OR_RETURN(const Tensor* ids, TensorArg(args, 1));
  HETRT_ASSIGN_OR_RETURN(const Tensor* freqs, TensorArg(args, 2));
  HETRT_ASSIGN_OR_RETURN(double presence, RealArg(args, 3));
  HETRT_ASSIGN_OR_RETURN(double frequency, RealArg(args, 4));
  HETRT_RETURN_IF_ERROR(ApplyPresenceAndFrequencyPenalty(*logits, *ids, *freqs, presence, frequency));
  *result = RelaxValue();
  return OkStatus();
}

// apply_softmax_with_temperature(logits, temperature), in place
Status SoftmaxWithTemperature(RelaxInterpreter&, const RelaxCallArgs& args, RelaxValue* result) {
  HETRT_ASSIGN_OR_RETURN(const Tensor* logits, TensorArg(args, 0));
  HETRT_ASSIGN_OR_RETURN(double temperature, RealArg(args, 1));
  HETRT_RETURN_IF_ERROR(ApplySoftmaxWithTemperature(*logits, temperature));
  *result = RelaxValue();
  return OkStatus();
}

constexpr std::array kLmBuiltins = {
    NamedRelaxBuiltin{"vm.builtin.sample_top_p_from_logits", &SampleFromLogits},
    NamedRelaxBuiltin{"vm.builtin.sample_top_p_from_prob", &SampleFromProb},
    NamedRelaxBuiltin{"vm.builtin.multinomial_from_uniform", &Multinomial},
    NamedRelaxBuiltin{"vm.builtin.apply_repetition_penalty", &RepetitionPenalty},
    NamedRelaxBuiltin{"vm.builtin.apply_presence_and_frequency_penalty", &PresenceFrequencyPenalty},
    NamedRelaxBuiltin{"vm.builtin.apply_softmax_with_temperature", &SoftmaxWithTemperature},
};

}  // namespace

std::span<const NamedRelaxBuiltin> LmRelaxBuiltins() { return kLmBuiltins; }

}  // namespace hetrt
