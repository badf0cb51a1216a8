// hetrt._hetrt.LlmEngine: the C++ generation engine for Python (hetrt.llm
// wraps it). Steps run without the GIL; token ids cross as Python lists.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "bindings.h"
#include "hetrt/llm/engine.h"
#include "hetrt/relax/paged_kv_cache.h"

namespace hetrt::python {
namespace {

GenerationRequest Request(std::vector<int32_t> prompt, int64_t max_tokens, float temperature, float top_p, int top_k,
                          float repetition_penalty, float presence_penalty, float frequency_penalty,
                          std::optional<uint64_t> seed, std::vector<int32_t> stop_token_ids) {
  const SamplingParams sampling{
      temperature,      top_p,           top_k, repetition_penalty, presence_penalty, frequency_penalty,
      seed.value_or(0), seed.has_value()};
  return GenerationRequest{std::move(prompt), max_tokens, sampling, std::move(stop_token_ids)};
}

// The model's description for Python, one key per LlmModelInfo field.
py::dict Info(const LlmModelInfo& i) {
  return Dict({{"library", py::str(i.library)},
               {"weights", py::str(i.weights)},
               {"model_type", py::str(i.model_type)},
               {"vocab_size", py::int_(i.vocab_size)},
               {"context_window_size", py::int_(i.context_window_size)},
               {"prefill_chunk_size", py::int_(i.prefill_chunk_size)},
               {"max_batch_size", py::int_(i.max_batch_size)},
               {"max_total_seq_len", py::int_(i.max_total_seq_len)},
               {"page_size", py::int_(i.page_size)},
               {"num_total_pages", py::int_(i.num_total_pages)},
               {"functions", py::cast(i.functions)},
               {"param_names", py::cast(i.param_names)},
               {"weight_bytes", py::int_(i.weight_bytes)},
               {"load_seconds", py::float_(i.load_seconds)}});
}

}  // namespace

void RegisterLlm(py::module_& m) {
  py::class_<LlmEngine>(m, "LlmEngine", "A language model's generation engine (use hetrt.llm.Engine).")
      .def(py::init([](const std::string& model_dir, const std::string& device, const std::string& library,
                       const std::string& weights, int64_t max_batch_size, int64_t max_total_seq_len,
                       int64_t prefill_chunk_size) {
             const LlmEngineOptions o{.model_dir = model_dir,
                                      .library = library,
                                      .weights = weights,
                                      .device = device,
                                      .max_batch_size = max_batch_size,
                                      .max_total_seq_len = max_total_seq_len,
                                      .prefill_chunk_size = prefill_chunk_size};
             py::gil_scoped_release release;
             return Unwrap(LlmEngine::Open(o));
           }),
           py::arg("model_dir"), py::arg("device") = "cpu", py::arg("library") = "", py::arg("weights") = "",
           py::arg("max_batch_size") = 0, py::arg("max_total_seq_len") = 0, py::arg("prefill_chunk_size") = 0)
      .def_property_readonly("info", [](const LlmEngine& e) { return Info(e.info()); })
      .def(
          "add_request",
          [](LlmEngine& e, std::vector<int32_t> prompt, int64_t max_tokens, float temperature, float top_p, int top_k,
             float repetition_penalty, float presence_penalty, float frequency_penalty, std::optional<uint64_t> seed,
             std::vector<int32_t> stop_token_ids) {
            return Unwrap(
                e.AddRequest(Request(std::move(prompt), max_tokens, temperature, top_p, top_k, repetition_penalty,
                                     presence_penalty, frequency_penalty, seed, std::move(stop_token_ids))));
          },
          py::arg("prompt"), py::arg("max_tokens"), py::arg("temperature"), py::arg("top_p"), py::arg("top_k"),
          py::arg("repetition_penalty"), py::arg("presence_penalty"), py::arg("frequency_penalty"), py::arg("seed"),
          py::arg("stop_token_ids"))
      .def("cancel", &LlmEngine::Cancel, py::arg("request"))
      .def("has_work", &LlmEngine::HasWork)
      .def("step",
           [](LlmEngine& e) {
             std::vector<TokenEvent> events;
             {
               py::gil_scoped_release release;
               events = Unwrap(e.Step());
             }
             py::list out;
             for (const TokenEvent& ev : events)
               out.append(py::make_tuple(ev.request, ev.token, py::str(FinishReasonName(ev.finish)), ev.error));
             return out;
           })
      .def(
          "logits",
          [](LlmEngine& e, std::vector<int32_t> prompt) {
            std::vector<float> logits;
            {
              py::gil_scoped_release release;
              logits = Unwrap(e.Logits(prompt));
            }
            return py::array_t<float>(static_cast<py::ssize_t>(logits.size()), logits.data());
          },
          py::arg("prompt"))
      .def_property_readonly("kv_available_pages", [](LlmEngine& e) { return e.kv_cache().num_available_pages(); })
      .def_property_readonly("kv_total_sequence_length",
                             [](LlmEngine& e) { return e.kv_cache().total_sequence_length(); });
}

}  // namespace hetrt::python
