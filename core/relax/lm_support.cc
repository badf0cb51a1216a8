#include "hetrt/relax/lm_support.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "hetrt/base/dtype.h"

namespace hetrt {
namespace {

struct Entry {
  float value;
  int64_t index;
};

// Descending by value, the lower index first on ties, NaN last: a strict weak
// order (TVM's comparator is not one once a NaN is present).
bool Before(const Entry& a, const Entry& b) {
  const bool a_nan = std::isnan(a.value), b_nan = std::isnan(b.value);
  if (a_nan != b_nan) return b_nan;
  if (!a_nan && a.value != b.value) return a.value > b.value;
  return a.index < b.index;
}

Status CheckNotNan(const char* fn, const char* name, double value) {
  if (std::isnan(value)) return InvalidArgument(std::string(fn) + ": " + name + " is NaN");
  return OkStatus();
}

Status CheckIds(const char* fn, size_t num_logits, std::span<const int32_t> token_ids) {
  for (size_t i = 0; i < token_ids.size(); ++i) {
    if (token_ids[i] < 0 || static_cast<size_t>(token_ids[i]) >= num_logits)
      return OutOfRange(std::string(fn) + ": token_ids[" + std::to_string(i) + "] = " + std::to_string(token_ids[i]) +
                        " is outside the " + std::to_string(num_logits) + " logits");
  }
  return OkStatus();
}

// The index of the largest non-NaN value (the lowest on ties), or -1 when all are NaN.
int64_t ArgmaxSkippingNan(std::span<const float> values) {
  int64_t best = -1;
  for (size_t i = 0; i < values.size(); ++i) {
    if (std::isnan(values[i])) continue;
    if (best < 0 || values[i] > values[best]) best = static_cast<int64_t>(i);
  }
  return best;
}

// ---- Tensor checks.

bool IsCompact(const Tensor& t) {
  const int64_t* strides = t.dl()->strides;
  if (strides == nullptr) return true;
  int64_t expected = 1;
  for (size_t i = t.shape().size(); i-- > 0;) {
    if (t.shape()[i] != 1 && strides[i] != expected) return false;
    expected *= t.shape()[i];
  }
  return true;
}

// `what` of builtin `fn` is a host, compact tensor of `dtype` with at least one dimension.
Status CheckTensor(const char* fn, const char* what, const Tensor& t, DLDataType dtype) {
  const std::string where = std::string(fn) + ": " + what;
  if (!t.defined()) return InvalidArgument(where + " is an undefined tensor");
  if (t.dtype() != dtype)
    return InvalidArgument(where + " must be " + DataTypeToString(dtype) + ", not " + DataTypeToString(t.dtype()));
  if (t.device().device_type != kDLCPU)
    return InvalidArgument(where + " must be on the host (cpu), not " + DeviceToString(t.device()) +
                           "; copy it to the host first");
  if (t.shape().empty()) return InvalidArgument(where + " must have at least one dimension, not a scalar");
  if (!IsCompact(t)) return InvalidArgument(where + " must be compact (row-major, no strides)");
  if (t.data() == nullptr && t.num_elements() > 0) return InvalidArgument(where + " has no data");
  return OkStatus();
}

// Every dimension but the last is 1 (TVM: "The leading dimensions of logits must be 1").
Status CheckOneRow(const char* fn, const char* what, const Tensor& t) {
  for (size_t i = 0; i + 1 < t.shape().size(); ++i) {
    if (t.shape()[i] != 1)
      return InvalidArgument(std::string(fn) + ": every dimension of " + what + " but the last must be 1, shape is " +
                             ShapeToString(t.shape()));
  }
  return OkStatus();
}

template <typename T>
T* HostData(const Tensor& t) {
  return reinterpret_cast<T*>(static_cast<uint8_t*>(t.data()) + t.dl()->byte_offset);
}

// The first `count` elements (fewer when a leading dimension is 0).
template <typename T>
std::span<T> FirstElements(const Tensor& t, int64_t count) {
  return {HostData<T>(t), static_cast<size_t>(std::min(count, t.num_elements()))};
}

}  // namespace

// ---- On host spans.

Result<int64_t> SampleTopPFromLogits(std::span<const float> logits, double temperature, double top_p, double uniform) {
  constexpr const char* kFn = "sample_top_p_from_logits";
  if (logits.empty()) return InvalidArgument(std::string(kFn) + ": no logits (vocabulary of 0)");
  HETRT_RETURN_IF_ERROR(CheckNotNan(kFn, "temperature", temperature));
  HETRT_RETURN_IF_ERROR(CheckNotNan(kFn, "top_p", top_p));
  HETRT_RETURN_IF_ERROR(CheckNotNan(kFn, "uniform", uniform));
  // TVM compares the double against the float literal 1e-6f.
  if (temperature < static_cast<double>(1e-6f)) {
    const int64_t best = ArgmaxSkippingNan(logits);
    if (best < 0) return InvalidArgument(std::string(kFn) + ": every logit is NaN");
    return best;
  }
  for (size_t i = 0; i < logits.size(); ++i) {
    if (std::isnan(logits[i])) return InvalidArgument(std::string(kFn) + ": logits[" + std::to_string(i) + "] is NaN");
  }
  std::vector<Entry> data(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) data[i] = {logits[i], static_cast<int64_t>(i)};
  std::sort(data.begin(), data.end(), Before);
  const float max_value = data[0].value;
  if (!std::isfinite(max_value))
    return InvalidArgument(std::string(kFn) + ": the largest logit is " + std::to_string(max_value) +
                           ": no distribution to sample");

  // TVM's arithmetic: a float scale (1 / temperature rounded to float), float
  // exponentials, sum, probabilities and running sums; the comparisons with
  // top_p and uniform in double.
  const float scale = static_cast<float>(1.0 / temperature);
  float sum = 0.0f;
  for (Entry& e : data) {
    e.value = std::exp((e.value - max_value) * scale);
    sum += e.value;
  }
  float cumulative = 0.0f, top_p_sum = 0.0f;
  for (Entry& e : data) {
    const float p = e.value / sum;
    if (cumulative < top_p) top_p_sum += p;
    cumulative += p;
    e.value = cumulative;
  }
  for (const Entry& e : data) {
    if (uniform < e.value / top_p_sum) return e.index;
  }
  // TVM checks uniform <= the first cumulative probability, then returns the argmax.
  if (uniform <= data[0].value) return data[0].index;
  return InvalidArgument(std::string(kFn) + ": uniform " + std::to_string(uniform) +
                         " lies past the distribution (it must be in [0, 1))");
}

Result<int64_t> SampleTopPFromProb(std::span<const float> prob, double top_p, double uniform) {
  constexpr const char* kFn = "sample_top_p_from_prob";
  if (prob.empty()) return InvalidArgument(std::string(kFn) + ": no probabilities (vocabulary of 0)");
  HETRT_RETURN_IF_ERROR(CheckNotNan(kFn, "top_p", top_p));
  HETRT_RETURN_IF_ERROR(CheckNotNan(kFn, "uniform", uniform));

  std::vector<Entry> data;
  // One pass over the entries >= cutoff; -1 when it finds none, or when (with
  // a cutoff above 0) the mass it kept is < top_p and the caller must retry.
  auto sample_with_cutoff = [&](float cutoff) -> int64_t {
    data.clear();
    for (size_t i = 0; i < prob.size(); ++i) {
      if (prob[i] >= cutoff) data.push_back({prob[i], static_cast<int64_t>(i)});
    }
    if (data.empty()) return -1;
    std::sort(data.begin(), data.end(), Before);
    // top_p_sum <= top_p, so uniform < p_max / top_p already picks the argmax.
    if (uniform < data[0].value / top_p) return data[0].index;
    float cumulative = 0.0f, top_p_sum = 0.0f;
    for (Entry& e : data) {
      if (!(cumulative < top_p)) break;  // entries past here keep their raw p
      top_p_sum += e.value;
      cumulative += e.value;
      e.value = cumulative;
    }
    if (cumulative < top_p && cutoff != 0.0f) return -1;
    for (const Entry& e : data) {
      if (uniform < e.value / top_p_sum) return e.index;
    }
    return data.back().index;
  };

  if (top_p < 1) {
    // At most 1024 entries can reach top_p / 1024, so this pass sorts few.
    const int64_t sampled = sample_with_cutoff(static_cast<float>(top_p / 1024));
    if (sampled >= 0) return sampled;
  }
  const int64_t sampled = sample_with_cutoff(0.0f);
  if (sampled >= 0) return sampled;
  if (std::all_of(prob.begin(), prob.end(), [](float p) { return std::isnan(p); }))
    return InvalidArgument(std::string(kFn) + ": every probability is NaN, nothing to sample from");
  return InvalidArgument(std::string(kFn) + ": no probability is >= 0, nothing to sample from");
}

Result<std::vector<int64_t>> MultinomialFromUniform(std::span<const float> prob, int64_t batch, int64_t vocab,
                                                    std::span<const float> uniform) {
  constexpr const char* kFn = "multinomial_from_uniform";
  if (batch < 0 || vocab <= 0)
    return InvalidArgument(std::string(kFn) + ": batch " + std::to_string(batch) + " and vocabulary " +
                           std::to_string(vocab) + " (need batch >= 0, vocabulary >= 1)");
  if (static_cast<uint64_t>(batch) > prob.size() / static_cast<uint64_t>(vocab) ||
      prob.size() != static_cast<uint64_t>(batch) * static_cast<uint64_t>(vocab))
    return InvalidArgument(std::string(kFn) + ": " + std::to_string(prob.size()) + " probabilities for batch " +
                           std::to_string(batch) + " x vocabulary " + std::to_string(vocab));
  if (uniform.size() != static_cast<uint64_t>(batch))
    return InvalidArgument(std::string(kFn) + ": " + std::to_string(uniform.size()) + " uniform samples for batch " +
                           std::to_string(batch));
  std::vector<int64_t> sampled(batch);
  for (int64_t i = 0; i < batch; ++i) {
    const float* row = prob.data() + i * vocab;
    float cumulative = 0.0f;
    int64_t j = 0;
    for (; j < vocab; ++j) {
      cumulative += row[j];
      if (cumulative > uniform[i]) break;
    }
    sampled[i] = std::min(j, vocab - 1);
  }
  return sampled;
}

Status ApplyRepetitionPenalty(std::span<float> logits, std::span<const int32_t> token_ids, double penalty) {
  constexpr const char* kFn = "apply_repetition_penalty";
  HETRT_RETURN_IF_ERROR(CheckNotNan(kFn, "penalty", penalty));
  HETRT_RETURN_IF_ERROR(CheckIds(kFn, logits.size(), token_ids));
  for (int32_t id : token_ids) {
    float& l = logits[id];
    l = l <= 0 ? static_cast<float>(l * penalty) : static_cast<float>(l / penalty);
  }
  return OkStatus();
}

Status ApplyPresenceAndFrequencyPenalty(std::span<float> logits, std::span<const int32_t> token_ids,
                                        std::span<const int32_t> token_freqs, double presence, double frequency) {
  constexpr const char* kFn = "apply_presence_and_frequency_penalty";
  HETRT_RETURN_IF_ERROR(CheckNotNan(kFn, "presence_penalty", presence));
  HETRT_RETURN_IF_ERROR(CheckNotNan(kFn, "frequency_penalty", frequency));
  if (token_freqs.size() != token_ids.size())
    return InvalidArgument(std::string(kFn) + ": " + std::to_string(token_ids.size()) + " token ids but " +
                           std::to_string(token_freqs.size()) + " frequencies");
  HETRT_RETURN_IF_ERROR(CheckIds(kFn, logits.size(), token_ids));
  for (size_t i = 0; i < token_ids.size(); ++i) {
    float& l = logits[token_ids[i]];
    l = static_cast<float>(l - (token_freqs[i] * frequency + presence));
  }
  return OkStatus();
}

Status ApplySoftmaxWithTemperature(std::span<float> logits, double temperature) {
  constexpr const char* kFn = "apply_softmax_with_temperature";
  if (logits.empty()) return InvalidArgument(std::string(kFn) + ": no logits (vocabulary of 0)");
  if (!(temperature > 0))
    return InvalidArgument(std::string(kFn) + ": temperature " + std::to_string(temperature) + " (must be > 0)");
  const float inv_temperature = static_cast<float>(1.0 / temperature);
  // TVM starts the running max at FLT_MIN (positive), not at -inf.
  float m = std::numeric_limits<float>::min();
  double d = 0.0;
  for (float l : logits) {
    const float x = l * inv_temperature;
    const float m_prev = m;
    m = std::max(m, x);
    d = d * std::exp(m_prev - m) + std::exp(x - m);
  }
  for (float& l : logits) {
    const float x = l * inv_temperature;
    l = static_cast<float>(std::exp(x - m) / d);
  }
  return OkStatus();
}

// ---- On tensors.

Result<int64_t> SampleTopPFromLogits(const Tensor& logits, double temperature, double top_p, double uniform) {
  constexpr const char* kFn = "sample_top_p_from_logits";
  HETRT_RETURN_IF_ERROR(CheckTensor(kFn, "logits", logits, kFloat32));
  HETRT_RETURN_IF_ERROR(CheckOneRow(kFn, "logits", logits));
  return SampleTopPFromLogits(FirstElements<const float>(logits, logits.shape().back()), temperature, top_p, uniform);
}

Result<int64_t> SampleTopPFromProb(const Tensor& prob, double top_p, double uniform) {
  constexpr const char* kFn = "sample_top_p_from_prob";
  HETRT_RETURN_IF_ERROR(CheckTensor(kFn, "prob", prob, kFloat32));
  HETRT_RETURN_IF_ERROR(CheckOneRow(kFn, "prob", prob));
  return SampleTopPFromProb(FirstElements<const float>(prob, prob.shape().back()), top_p, uniform);
}

Result<Tensor> MultinomialFromUniform(const Tensor& prob, const Tensor& uniform) {
  constexpr const char* kFn = "multinomial_from_uniform";
  HETRT_RETURN_IF_ERROR(CheckTensor(kFn, "prob", prob, kFloat32));
  HETRT_RETURN_IF_ERROR(CheckTensor(kFn, "uniform_sample", uniform, kFloat32));
  const std::vector<int64_t>& shape = prob.shape();
  if (shape.size() < 2)
    return InvalidArgument(std::string(kFn) + ": prob must be (batch, vocabulary), shape is " + ShapeToString(shape));
  for (size_t i = 1; i + 1 < shape.size(); ++i) {
    if (shape[i] != 1)
      return InvalidArgument(std::string(kFn) + ": prob must be (batch, 1..., vocabulary), shape is " +
                             ShapeToString(shape));
  }
  const int64_t batch = shape.front(), vocab = shape.back();
  if (uniform.num_elements() != batch)
    return InvalidArgument(std::string(kFn) + ": uniform_sample " + ShapeToString(uniform.shape()) +
                           " must hold one number per row of prob " + ShapeToString(shape));
  HETRT_ASSIGN_OR_RETURN(std::vector<int64_t> sampled,
                         MultinomialFromUniform(FirstElements<const float>(prob, prob.num_elements()), batch, vocab,
                                                FirstElements<const float>(uniform, batch)));
  HETRT_ASSIGN_OR_RETURN(Tensor out, Tensor::EmptyHost({batch, 1}, DLDataType{kDLInt, 64, 1}));
  std::copy(sampled.begin(), sampled.end(), out.data_as<int64_t>());
  return out;
}

Status ApplyRepetitionPenalty(const Tensor& logits, const Tensor& token_ids, double penalty) {
  constexpr const char* kFn = "apply_repetition_penalty";
  HETRT_RETURN_IF_ERROR(CheckTensor(kFn, "logits", logits, kFloat32));
  HETRT_RETURN_IF_ERROR(CheckTensor(kFn, "token_ids", token_ids, kInt32));
  return ApplyRepetitionPenalty(FirstElements<float>(logits, logits.num_elements()),
                                FirstElements<const int32_t>(token_ids, token_ids.shape().back()), penalty);
}

Status ApplyPresenceAndFrequencyPenalty(const Tensor& logits, const Tensor& token_ids, const Tensor& token_freqs,
                                        double presence, double frequency) {
  constexpr const char* kFn = "apply_presence_and_frequency_penalty";
  HETRT_RETURN_IF_ERROR(CheckTensor(kFn, "logits", logits, kFloat32));
  HETRT_RETURN_IF_ERROR(CheckTensor(kFn, "token_ids", token_ids, kInt32));
  HETRT_RETURN_IF_ERROR(CheckTensor(kFn, "token_freqs", token_freqs, kInt32));
  return ApplyPresenceAndFrequencyPenalty(FirstElements<float>(logits, logits.num_elements()),
                                          FirstElements<const int32_t>(token_ids, token_ids.shape().back()),
                                          FirstElements<const int32_t>(token_freqs, token_freqs.shape().back()),
                                          presence, frequency);
}

Status ApplySoftmaxWithTemperature(const Tensor& logits, double temperature) {
  constexpr const char* kFn = "apply_softmax_with_temperature";
  HETRT_RETURN_IF_ERROR(CheckTensor(kFn, "logits", logits, kFloat32));
  return ApplySoftmaxWithTemperature(FirstElements<float>(logits, logits.shape().back()), temperature);
}

}  // namespace hetrt
