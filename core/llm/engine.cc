#include "hetrt/llm/engine.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <unordered_set>

#include "hetrt/base/dtype.h"
#include "hetrt/base/json_document.h"
#include "hetrt/base/tensor.h"
#include "hetrt/exec/open_model.h"
#include "hetrt/plugin_host/plugin_registry.h"
#include "hetrt/relax/paged_kv_cache.h"
#include "hetrt/relax/tensor_cache.h"
#include "hetrt/relax/vm.h"

namespace hetrt {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) { return std::chrono::duration<double>(Clock::now() - since).count(); }

// The library and the weights of a model folder (docs/llm.md).
Status FindModelFiles(const LlmEngineOptions& o, std::string* library, std::string* weights) {
  *library = o.library;
  *weights = o.weights;
  std::error_code ec;
  if (!o.model_dir.empty() && !fs::is_directory(o.model_dir, ec))
    return NotFound("model folder '" + o.model_dir + "' is not a directory");
  if (weights->empty()) {
    if (o.model_dir.empty()) return InvalidArgument("name a model folder, or a library and its weights folder");
    *weights = LlmWeightsFolder(o.model_dir);
    if (weights->empty())
      return NotFound("model folder '" + o.model_dir +
                      "' has no weights: expected tensor-cache.json (or ndarray-cache.json) in it or in its params/ "
                      "folder");
  }
  if (library->empty()) {
    if (o.model_dir.empty()) return InvalidArgument("name the model library (.so) beside the weights");
    auto found = LlmLibraryIn(o.model_dir);
    if (!found.ok()) return InvalidArgument(found.status().message() + "; name it with --library");
    *library = *found;
  }
  return OkStatus();
}

int64_t IntField(const nlohmann::json& j, const char* key, int64_t fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : fallback;
}

}  // namespace

const char* FinishReasonName(FinishReason reason) {
  switch (reason) {
    case FinishReason::kNone: return "";
    case FinishReason::kLength: return "length";
    case FinishReason::kStop: return "stop";
    case FinishReason::kCancelled: return "cancelled";
    case FinishReason::kError: return "error";
  }
  return "";
}

struct LlmEngine::Impl {
  struct Request {
    int64_t id = 0;
    GenerationRequest request;
    Sampler sampler;
    std::vector<int32_t> history;  // prompt, then what was generated
    size_t prefilled = 0;          // prompt tokens in the cache
    int64_t generated = 0;
    int32_t pending = -1;  // the last sampled token, not yet in the cache
    int64_t reserved_pages = 0;
    bool admitted = false;
    explicit Request(int64_t id_, GenerationRequest r)
        : id(id_), request(std::move(r)), sampler(request.sampling), history(request.prompt) {}
  };

  LlmEngineOptions options;
  LlmModelInfo info;
  DLDevice device{kDLCPU, 0};
  std::unique_ptr<RelaxVirtualMachine> vm;
  RelaxValue params;  // the packed_params tuple
  RelaxValue kv;      // the cache as the bytecode sees it
  PagedKvCache* cache = nullptr;
  uint32_t fn_embed = 0;
  std::optional<uint32_t> fn_prefill, fn_decode, fn_batch_prefill, fn_batch_decode;
  int64_t next_id = 0;
  std::map<int64_t, Request> requests;
  std::deque<int64_t> waiting;
  std::vector<int64_t> running;  // admitted, in admission order
  int64_t reserved_pages = 0;
  LlmStepStats stats;
  RelaxProfile* profile = nullptr;  // SetProfile
  // Reused per step.
  std::vector<int64_t> seq_ids, lengths;
  std::vector<int32_t> tokens;
  std::vector<float> host_logits;
  // A decode step's arguments, rewritten in place: a step allocates nothing.
  Tensor token_ids;        // host int32, as long as the longest forward so far
  RelaxValue embed_input;  // a view of token_ids
  RelaxValue step_input;   // the embeddings as (batch, 1, hidden)
  std::vector<int64_t> chunk_ends;

  Device vm_device;  // the device the model runs on (its logits are there)
  Status Load();
  // Ids inside the vocabulary; `what` names them in the error ("prompt token").
  Status CheckTokens(std::span<const int32_t> ids, const char* what) const;
  // A request checked whole before it takes a sequence.
  Status CheckRequest(const GenerationRequest& request) const;
  int64_t PagesFor(const GenerationRequest& request) const;
  // A model function; with a profile set, its events are appended to it.
  // `step`: a decode step's call, replayed (prefill's shapes rarely repeat:
  // recording them would only pin memory).
  Result<RelaxValue> Invoke(uint32_t fn, std::span<const RelaxValue> args, bool step = false) {
    if (profile == nullptr) return vm->Invoke(fn, args, step);
    RelaxProfile one;
    auto result = vm->InvokeProfiled(fn, args, &one);
    if (profile->events.empty()) profile->start_ns = one.start_ns;
    profile->events.insert(profile->events.end(), one.events.begin(), one.events.end());
    profile->end_ns = one.end_ns;
    return result;
  }
  Result<RelaxValue> Embed(std::span<const int32_t> ids, bool decode);
  Result<RelaxValue> Forward(bool decode, std::span<const int32_t> ids, std::span<const int64_t> chunk_ends);
  Result<const float*> HostLogits(const Tensor& logits);
  // begin_forward, the model, end_forward for `seq_ids` (each `lengths[i]`
  // of `tokens`, in order); taken back with popn if the model fails. The
  // logits' rows on the host, valid until the next forward.
  Result<const float*> ForwardOnCache(bool decode, std::span<const int64_t> seq_ids,
                                      std::span<const int64_t> lengths, std::span<const int32_t> tokens);
  Status Admit();
  Status Finish(Request& r, FinishReason reason, std::vector<TokenEvent>* events, int32_t token,
                std::string error = {});
  Result<int32_t> SampleFor(Request& r, const float* row);
};

Status LlmEngine::Impl::Load() {
  const auto start = Clock::now();
  HETRT_RETURN_IF_ERROR(FindModelFiles(options, &info.library, &info.weights));
  HETRT_ASSIGN_OR_RETURN(device, ParseDevice(options.device), "device '" + options.device + "'");
  HETRT_ASSIGN_OR_RETURN(vm, OpenRelaxVm(info.library, {device}, options.plugins));
  const std::string where = "library '" + info.library + "'";
  auto fn = [&](const char* name) -> std::optional<uint32_t> {
    auto f = vm->FindFunction(name);
    if (!f.ok()) return std::nullopt;
    info.functions.push_back(name);
    return *f;
  };
  auto embed = fn("embed");
  fn_prefill = fn("prefill");
  fn_decode = fn("decode");
  fn_batch_prefill = fn("batch_prefill");
  fn_batch_decode = fn("batch_decode");
  auto create = fn("create_tir_paged_kv_cache");
  const bool flashinfer = fn("create_flashinfer_paged_kv_cache").has_value();
  if (!embed) return InvalidArgument(where + " is not a language model library: it has no 'embed' function");
  if (!create)
    return Unimplemented(where + (flashinfer ? " creates its KV cache only with FlashInfer kernels, which hetrt "
                                               "does not run; build it with TVM's TIR attention"
                                             : " has no create_tir_paged_kv_cache function"));
  if (!fn_prefill && !fn_batch_prefill) return InvalidArgument(where + " has neither prefill nor batch_prefill");
  if (!fn_decode && !fn_batch_decode) return InvalidArgument(where + " has neither decode nor batch_decode");
  fn_embed = *embed;

  // MLC's metadata: sizes, and the weights by name in packed_params order.
  nlohmann::json meta = nlohmann::json::object();
  if (auto m = vm->FindFunction("_metadata"); m.ok()) {
    HETRT_ASSIGN_OR_RETURN(RelaxValue text, vm->Invoke(*m, {}), where + ": _metadata()");
    if (!text.is(RelaxValue::Kind::kString))
      return InvalidArgument(where + ": _metadata() returned " + text.Describe() + ", not a JSON string");
    HETRT_ASSIGN_OR_RETURN(meta, ParseJsonDocument(text.string(), where + ": _metadata()"));
    if (!meta.is_object()) return InvalidArgument(where + ": _metadata() is not a JSON object");
  }
  if (auto it = meta.find("model_type"); it != meta.end() && it->is_string()) info.model_type = *it;
  if (auto it = meta.find("sliding_window_size"); it != meta.end() && it->is_number_integer() && *it != -1)
    return Unimplemented(where + " uses sliding-window attention (sliding_window_size " + it->dump() +
                         "), which hetrt's KV cache does not support");
  if (auto it = meta.find("kv_state_kind"); it != meta.end() && it->is_string() && *it != "kv_cache")
    return Unimplemented(where + " keeps its state as '" + it->get<std::string>() +
                         "' (RNN state); hetrt runs models with a paged KV cache");
  info.context_window_size = IntField(meta, "context_window_size", 2048);
  // Its prefill functions are planned for at most _metadata's prefill_chunk_size tokens.
  const int64_t compiled_chunk = IntField(meta, "prefill_chunk_size", 0);
  if (options.prefill_chunk_size > 0 && compiled_chunk > 0 && options.prefill_chunk_size > compiled_chunk)
    return InvalidArgument(where + " was compiled for prefill chunks of at most " + std::to_string(compiled_chunk) +
                           " tokens (_metadata's prefill_chunk_size), " + std::to_string(options.prefill_chunk_size) +
                           " asked");
  info.prefill_chunk_size =
      options.prefill_chunk_size > 0 ? options.prefill_chunk_size : (compiled_chunk > 0 ? compiled_chunk : 2048);
  // The library's functions are compiled for at most its max_batch_size
  // sequences (static memory planning): more would overrun their storage.
  const int64_t compiled_batch = IntField(meta, "max_batch_size", 0);
  if (options.max_batch_size > 0 && compiled_batch > 0 && options.max_batch_size > compiled_batch)
    return InvalidArgument(where + " was compiled for at most " + std::to_string(compiled_batch) +
                           " sequences per batch (_metadata's max_batch_size), " +
                           std::to_string(options.max_batch_size) + " asked");
  info.max_batch_size = options.max_batch_size > 0 ? options.max_batch_size : std::max<int64_t>(compiled_batch, 1);
  // Without batch_decode, sequences decode one at a time: one runs at once.
  if (!fn_batch_decode) {
    if (options.max_batch_size > 1)
      return InvalidArgument(where + " has no batch_decode: it runs one sequence at a time, " +
                             std::to_string(options.max_batch_size) + " asked (max_batch_size)");
    info.max_batch_size = 1;
  }
  info.max_total_seq_len =
      options.max_total_seq_len > 0 ? options.max_total_seq_len : info.context_window_size * info.max_batch_size;
  // A decode step is the same call for the same batch size every token:
  // replayed, each batch size's memory kept. A function that cannot be replayed (one that branches)
  // is interpreted as before, so its refusal is not an error here.
  if (options.replay_steps) {
    const size_t batches = static_cast<size_t>(info.max_batch_size);
    (void)vm->EnableReplay(fn_embed, batches);
    if (fn_decode) (void)vm->EnableReplay(*fn_decode, 1);
    if (fn_batch_decode) (void)vm->EnableReplay(*fn_batch_decode, batches);
  }

  // Weights: memory-mapped shards, each record decoded once onto the device.
  HETRT_ASSIGN_OR_RETURN(TensorCacheIndex index, TensorCacheIndex::Open(info.weights));
  std::vector<const TensorCacheRecord*> records;
  if (auto it = meta.find("params"); it != meta.end() && it->is_array()) {
    for (const auto& p : *it) {
      if (!p.is_object() || !p.contains("name") || !p["name"].is_string())
        return InvalidArgument(where + ": _metadata's params entries need a name");
      const std::string name = p["name"];
      const TensorCacheRecord* record = index.Find(name);
      if (record == nullptr)
        return NotFound("the model asks for weight '" + name + "', which " + index.index_path() + " does not hold");
      records.push_back(record);
      if (info.vocab_size == 0 && p.contains("shape") && p["shape"].is_array() && !p["shape"].empty() &&
          p["shape"][0] == "vocab_size" && !record->shape.empty())
        info.vocab_size = record->shape[0];
    }
  } else {
    for (const TensorCacheRecord& r : index.records()) records.push_back(&r);
  }
  if (info.vocab_size == 0)
    for (const TensorCacheRecord* r : records)
      if (r->name.find("embed") != std::string::npos && r->shape.size() == 2) {
        info.vocab_size = r->shape[0];
        break;
      }
  if (info.vocab_size <= 0)
    return InvalidArgument(where +
                           ": cannot tell the vocabulary size (no 'vocab_size' weight in _metadata and no "
                           "2-D embedding weight)");
  HETRT_ASSIGN_OR_RETURN(vm_device, vm->plugins().DeviceFor(device));
  uint64_t total = 0, done = 0;
  for (const TensorCacheRecord* r : records) total += r->nbytes;
  RelaxTuple weights;
  weights.reserve(records.size());
  for (const TensorCacheRecord* r : records) {
    HETRT_ASSIGN_OR_RETURN(Tensor t, LoadRecord(index, *r, vm_device),
                           "loading weight '" + r->name + "' from " + info.weights);
    info.param_names.push_back(r->name);
    info.weight_bytes += t.nbytes();
    weights.push_back(RelaxValue::FromTensor(std::move(t)));
    done += r->nbytes;
    if (options.load_progress) options.load_progress(done, total);
  }
  params = RelaxValue::Tuple(std::move(weights));

  // The KV cache, page size 16 (what TVM's kernels are built for).
  std::vector<RelaxValue> args = {RelaxValue::Shape({info.max_batch_size}), RelaxValue::Shape({info.max_total_seq_len}),
                                  RelaxValue::Shape({info.prefill_chunk_size}), RelaxValue::Shape({info.page_size})};
  if (vm->ParamNames(*create).size() == 5) args.push_back(RelaxValue::Shape({0}));
  HETRT_ASSIGN_OR_RETURN(kv, vm->Invoke(*create, args), where + ": create_tir_paged_kv_cache");
  cache = kv.object_as<PagedKvCache>();
  if (cache == nullptr)
    return InvalidArgument(where + ": create_tir_paged_kv_cache returned " + kv.Describe() + ", not a KV cache");
  info.num_total_pages = cache->layout().num_total_pages();
  info.load_seconds = Seconds(start);
  return OkStatus();
}

// Rewrites `value` into a view of `base` when nothing else holds it, else
// makes a new one: no allocation in the steady state.
static Status AssignViewTo(RelaxValue& value, const Tensor& base, std::span<const int64_t> shape, DLDataType dtype) {
  if (!value.is(RelaxValue::Kind::kTensor) || value.use_count() != 1) value = RelaxValue::FromTensor(Tensor());
  return value.tensor().AssignView(base, shape, dtype);
}

Result<RelaxValue> LlmEngine::Impl::Embed(std::span<const int32_t> ids, bool decode) {
  const int64_t n = static_cast<int64_t>(ids.size());
  if (!token_ids.defined() || token_ids.num_elements() < n) {
    HETRT_ASSIGN_OR_RETURN(token_ids, Tensor::EmptyHost({std::max(n, info.max_batch_size)}, kInt32));
  }
  std::memcpy(token_ids.data(), ids.data(), ids.size_bytes());
  HETRT_RETURN_IF_ERROR(AssignViewTo(embed_input, token_ids, std::span(&n, 1), kInt32));
  RelaxValue input = embed_input;
  if (device.device_type != kDLCPU) {
    HETRT_ASSIGN_OR_RETURN(Tensor copy, vm->ToDevice(embed_input.tensor(), device));
    input = RelaxValue::FromTensor(std::move(copy));
  }
  const RelaxValue args[] = {std::move(input), params};
  HETRT_ASSIGN_OR_RETURN(RelaxValue out, Invoke(fn_embed, args, decode), "embed");
  if (!out.is(RelaxValue::Kind::kTensor) || out.tensor().shape().size() != 2)
    return InvalidArgument("embed returned " + out.Describe() + ", expected (tokens, hidden)");
  info.hidden_size = out.tensor().shape()[1];
  return out;
}

// One forward of the sequences in `seq_ids` (begin_forward already called):
// decode takes one token per sequence; prefill the concatenated chunks, with
// `chunk_ends` the end of each sequence's rows. Returns logits (B, V) rows.
Result<RelaxValue> LlmEngine::Impl::Forward(bool decode, std::span<const int32_t> ids,
                                            std::span<const int64_t> chunk_ends) {
  const int64_t batch = static_cast<int64_t>(chunk_ends.size());
  const int64_t total = static_cast<int64_t>(ids.size());
  HETRT_ASSIGN_OR_RETURN(RelaxValue embedded, Embed(ids, decode));
  const Tensor& embeds = embedded.tensor();
  const DLDataType dtype = embeds.dtype();
  RelaxValue out;
  if (decode) {
    const int64_t shape[] = {batch, 1, info.hidden_size};
    HETRT_RETURN_IF_ERROR(AssignViewTo(step_input, embeds, shape, dtype));
    const bool single = batch == 1 && fn_decode;
    if (!single && !fn_batch_decode)
      return Unimplemented("the library has no batch_decode: decode one sequence at a time");
    const RelaxValue args[] = {step_input, kv, params};
    auto stepped = Invoke(single ? *fn_decode : *fn_batch_decode, args, /*step=*/true);
    // The embeddings go back to embed's memory for the next step.
    step_input.tensor().ReleaseMemory();
    HETRT_ASSIGN_OR_RETURN(out, std::move(stepped), single ? "decode" : "batch_decode");
  } else {
    HETRT_ASSIGN_OR_RETURN(Tensor view, embeds.View({1, total, info.hidden_size}, dtype));
    if (batch == 1 && fn_prefill) {
      const RelaxValue args[] = {RelaxValue::FromTensor(std::move(view)), kv, params};
      HETRT_ASSIGN_OR_RETURN(out, Invoke(*fn_prefill, args), "prefill");
    } else {
      if (!fn_batch_prefill) return Unimplemented("the library has no batch_prefill: prefill one sequence at a time");
      HETRT_ASSIGN_OR_RETURN(Tensor positions, Tensor::EmptyHost({batch}, kInt32));
      for (int64_t i = 0; i < batch; ++i) positions.data_as<int32_t>()[i] = static_cast<int32_t>(chunk_ends[i] - 1);
      if (device.device_type != kDLCPU) {
        HETRT_ASSIGN_OR_RETURN(positions, vm->ToDevice(positions, device));
      }
      const RelaxValue args[] = {RelaxValue::FromTensor(std::move(view)), RelaxValue::FromTensor(positions), kv,
                                 params};
      HETRT_ASSIGN_OR_RETURN(out, Invoke(*fn_batch_prefill, args), "batch_prefill");
    }
  }
  if (!out.is(RelaxValue::Kind::kTuple) || out.tuple().empty() || !out.tuple()[0].is(RelaxValue::Kind::kTensor))
    return InvalidArgument("the model returned " + out.Describe() + ", expected (logits, kv_cache)");
  const Tensor& logits = out.tuple()[0].tensor();
  if (logits.num_elements() != batch * info.vocab_size || logits.dtype().code != kDLFloat || logits.dtype().bits != 32)
    return InvalidArgument("the model returned logits " + DataTypeToString(logits.dtype()) +
                           ShapeToString(logits.shape()) + ", expected " + std::to_string(batch) + " rows of " +
                           std::to_string(info.vocab_size) + " float32");
  return out;
}

Result<const float*> LlmEngine::Impl::HostLogits(const Tensor& logits) {
  if (logits.device().device_type == kDLCPU)
    return reinterpret_cast<const float*>(static_cast<const uint8_t*>(logits.data()) + logits.dl()->byte_offset);
  host_logits.resize(static_cast<size_t>(logits.num_elements()));
  HETRT_RETURN_IF_ERROR(vm->Synchronize());
  HETRT_RETURN_IF_ERROR(vm_device.Copy(logits.data(), logits.dl()->byte_offset, logits.device(), host_logits.data(), 0,
                                       DLDevice{kDLCPU, 0}, logits.nbytes()),
                        "reading the logits back");
  return host_logits.data();
}

Result<const float*> LlmEngine::Impl::ForwardOnCache(bool decode, std::span<const int64_t> seq_ids,
                                                     std::span<const int64_t> lengths,
                                                     std::span<const int32_t> tokens) {
  chunk_ends.resize(lengths.size());
  int64_t at = 0;
  for (size_t i = 0; i < lengths.size(); ++i) chunk_ends[i] = at += lengths[i];
  HETRT_RETURN_IF_ERROR(cache->BeginForward(seq_ids, lengths));
  auto out = Forward(decode, tokens, chunk_ends);
  if (!out.ok()) {  // the cache grew at begin_forward: take the tokens back
    for (size_t i = 0; i < seq_ids.size(); ++i) (void)cache->PopN(seq_ids[i], lengths[i]);
    return out.status();
  }
  HETRT_RETURN_IF_ERROR(cache->EndForward());
  // The logits stay valid after `out` goes: the memory stays with the step's
  // recording or the VM's pool until the next forward.
  return HostLogits(out->tuple()[0].tensor());
}

Status LlmEngine::Impl::CheckTokens(std::span<const int32_t> ids, const char* what) const {
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= info.vocab_size)
      return InvalidArgument(std::string(what) + " " + std::to_string(i) + " is " + std::to_string(ids[i]) +
                             ", outside the vocabulary [0, " + std::to_string(info.vocab_size) + ")");
  return OkStatus();
}

Status LlmEngine::Impl::CheckRequest(const GenerationRequest& request) const {
  if (request.prompt.empty()) return InvalidArgument("the prompt is empty: give at least one token id");
  HETRT_RETURN_IF_ERROR(CheckTokens(request.prompt, "prompt token"));
  HETRT_RETURN_IF_ERROR(CheckTokens(request.stop_token_ids, "stop token"));
  if (request.max_tokens < 0)
    return InvalidArgument("max_tokens is " + std::to_string(request.max_tokens) + "; it must be >= 0");
  const int64_t context = std::min(info.context_window_size, info.max_total_seq_len);
  const int64_t length = static_cast<int64_t>(request.prompt.size());
  if (request.max_tokens > context - length)  // (not length + max_tokens: max_tokens may be near INT64_MAX)
    return InvalidArgument("the prompt's " + std::to_string(length) + " tokens plus max_tokens " +
                           std::to_string(request.max_tokens) + " exceed the context of " + std::to_string(context) +
                           " tokens");
  // (Within max_total_seq_len a request always fits: the cache holds
  // ceil(max_total_seq_len / page) + 1 pages.)
  return request.sampling.Validate(info.vocab_size);
}

int64_t LlmEngine::Impl::PagesFor(const GenerationRequest& request) const {
  const int64_t tokens = static_cast<int64_t>(request.prompt.size()) + request.max_tokens;
  return (tokens + info.page_size - 1) / info.page_size;
}

Status LlmEngine::Impl::Admit() {
  while (!waiting.empty() && static_cast<int64_t>(running.size()) < info.max_batch_size) {
    Request& r = requests.at(waiting.front());
    const int64_t need = PagesFor(r.request);
    if (reserved_pages + need > info.num_total_pages) break;  // first come, first served
    HETRT_RETURN_IF_ERROR(cache->AddSequence(r.id));
    r.reserved_pages = need;
    r.admitted = true;
    reserved_pages += need;
    running.push_back(r.id);
    waiting.pop_front();
  }
  return OkStatus();
}

Result<int32_t> LlmEngine::Impl::SampleFor(Request& r, const float* row) {
  return r.sampler.Sample(std::span<const float>(row, static_cast<size_t>(info.vocab_size)), r.history,
                          r.request.prompt.size());
}

Status LlmEngine::Impl::Finish(Request& r, FinishReason reason, std::vector<TokenEvent>* events, int32_t token,
                               std::string error) {
  if (events != nullptr) events->push_back(TokenEvent{r.id, token, reason, std::move(error)});
  Status s = OkStatus();
  if (r.admitted) {
    s = cache->RemoveSequence(r.id);
    reserved_pages -= r.reserved_pages;
    running.erase(std::find(running.begin(), running.end(), r.id));
  } else {
    waiting.erase(std::find(waiting.begin(), waiting.end(), r.id));
  }
  requests.erase(r.id);
  return s;
}

// ---- LlmEngine

LlmEngine::LlmEngine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LlmEngine::~LlmEngine() = default;

Result<std::unique_ptr<LlmEngine>> LlmEngine::Open(const LlmEngineOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  HETRT_RETURN_IF_ERROR(impl->Load());
  return std::unique_ptr<LlmEngine>(new LlmEngine(std::move(impl)));
}

const LlmModelInfo& LlmEngine::info() const { return impl_->info; }
RelaxVirtualMachine& LlmEngine::vm() { return *impl_->vm; }
PagedKvCache& LlmEngine::kv_cache() { return *impl_->cache; }
const LlmStepStats& LlmEngine::stats() const { return impl_->stats; }
void LlmEngine::SetProfile(RelaxProfile* vm, std::vector<BuiltinKernelEvent>* kv_kernels) {
  impl_->profile = vm;
  impl_->cache->SetProfile(kv_kernels);
}
bool LlmEngine::HasWork() const { return !impl_->requests.empty(); }
size_t LlmEngine::num_running() const { return impl_->running.size(); }
size_t LlmEngine::num_waiting() const { return impl_->waiting.size(); }

Status LlmEngine::CheckRequest(const GenerationRequest& request) const { return impl_->CheckRequest(request); }
int64_t LlmEngine::PagesFor(const GenerationRequest& request) const { return impl_->PagesFor(request); }
int64_t LlmEngine::unreserved_pages() const { return impl_->info.num_total_pages - impl_->reserved_pages; }

Result<int64_t> LlmEngine::AddRequest(GenerationRequest request) {
  Impl& m = *impl_;
  HETRT_RETURN_IF_ERROR(m.CheckRequest(request));
  // Sorted and distinct: each token is looked up in them (a list may be long).
  auto& stops = request.stop_token_ids;
  std::sort(stops.begin(), stops.end());
  stops.erase(std::unique(stops.begin(), stops.end()), stops.end());
  const int64_t id = m.next_id++;
  m.requests.emplace(id, Impl::Request(id, std::move(request)));
  m.waiting.push_back(id);
  return id;
}

bool LlmEngine::Cancel(int64_t request) {
  auto it = impl_->requests.find(request);
  if (it == impl_->requests.end()) return false;
  (void)impl_->Finish(it->second, FinishReason::kCancelled, nullptr, -1);
  return true;
}

Result<std::vector<TokenEvent>> LlmEngine::Step() {
  Impl& m = *impl_;
  std::vector<TokenEvent> events;
  // A request asking for no tokens ends before it takes a page. (Ids first:
  // Finish erases from `waiting`, which invalidates a deque's iterators.)
  m.seq_ids.clear();
  for (int64_t id : m.waiting)
    if (m.requests.at(id).request.max_tokens == 0) m.seq_ids.push_back(id);
  for (int64_t id : m.seq_ids) HETRT_RETURN_IF_ERROR(m.Finish(m.requests.at(id), FinishReason::kLength, &events, -1));
  HETRT_RETURN_IF_ERROR(m.Admit());
  std::vector<int64_t> just_prefilled;
  // A sampled token is emitted at once, and may end its request.
  auto emit = [&](Impl::Request& r, int32_t token) -> Status {
    r.history.push_back(token);
    r.pending = token;
    ++r.generated;
    const auto& stops = r.request.stop_token_ids;
    if (std::binary_search(stops.begin(), stops.end(), token)) return m.Finish(r, FinishReason::kStop, &events, token);
    if (r.generated >= r.request.max_tokens) return m.Finish(r, FinishReason::kLength, &events, token);
    events.push_back(TokenEvent{r.id, token, FinishReason::kNone, {}});
    return OkStatus();
  };
  // A row no token can be drawn from (NaN logits, none finite) ends its
  // request alone: the others' tokens are in the cache and go on.
  auto sample = [&](Impl::Request& r, const float* row) -> Status {
    auto token = m.SampleFor(r, row);
    if (token.ok()) return emit(r, *token);
    return m.Finish(r, FinishReason::kError, &events, -1,
                    "request " + std::to_string(r.id) + ": " + token.status().message());
  };

  // Prefill: the next chunk of every admitted prompt, up to the chunk size.
  m.seq_ids.clear();
  m.lengths.clear();
  m.tokens.clear();
  int64_t budget = m.info.prefill_chunk_size;
  for (int64_t id : m.running) {
    Impl::Request& r = m.requests.at(id);
    const int64_t left = static_cast<int64_t>(r.request.prompt.size() - r.prefilled);
    if (left == 0 || budget == 0) continue;
    if (!m.fn_batch_prefill && !m.seq_ids.empty()) break;  // prefill takes one sequence
    const int64_t take = std::min(left, budget);
    budget -= take;
    m.seq_ids.push_back(id);
    m.lengths.push_back(take);
    m.tokens.insert(m.tokens.end(), r.request.prompt.begin() + static_cast<ptrdiff_t>(r.prefilled),
                    r.request.prompt.begin() + static_cast<ptrdiff_t>(r.prefilled + take));
  }
  if (!m.seq_ids.empty()) {
    const auto start = Clock::now();
    HETRT_ASSIGN_OR_RETURN(const float* rows, m.ForwardOnCache(/*decode=*/false, m.seq_ids, m.lengths, m.tokens));
    ++m.stats.prefill_steps;
    m.stats.prefill_tokens += m.tokens.size();
    for (size_t i = 0; i < m.seq_ids.size(); ++i) {
      Impl::Request& r = m.requests.at(m.seq_ids[i]);
      r.prefilled += static_cast<size_t>(m.lengths[i]);
      if (r.prefilled < r.request.prompt.size()) continue;
      just_prefilled.push_back(r.id);
      HETRT_RETURN_IF_ERROR(sample(r, rows + i * static_cast<size_t>(m.info.vocab_size)));
    }
    m.stats.prefill_seconds += Seconds(start);
  }

  // Decode: every sequence with a sampled token not yet in the cache.
  m.seq_ids.clear();
  m.lengths.clear();
  m.tokens.clear();
  for (int64_t id : m.running) {
    const Impl::Request& r = m.requests.at(id);
    if (r.pending < 0 || std::find(just_prefilled.begin(), just_prefilled.end(), id) != just_prefilled.end()) continue;
    m.seq_ids.push_back(id);
    m.lengths.push_back(1);
    m.tokens.push_back(r.pending);
  }
  if (!m.seq_ids.empty()) {
    const auto start = Clock::now();
    HETRT_ASSIGN_OR_RETURN(const float* rows, m.ForwardOnCache(/*decode=*/true, m.seq_ids, m.lengths, m.tokens));
    ++m.stats.decode_steps;
    m.stats.decode_tokens += m.seq_ids.size();
    const std::vector<int64_t> decoded = m.seq_ids;
    for (size_t i = 0; i < decoded.size(); ++i) {
      HETRT_RETURN_IF_ERROR(sample(m.requests.at(decoded[i]), rows + i * static_cast<size_t>(m.info.vocab_size)));
    }
    m.stats.decode_seconds += Seconds(start);
  }
  return events;
}

Result<const float*> LlmEngine::Forward(std::span<const int64_t> seq_ids, std::span<const int64_t> lengths,
                                        std::span<const int32_t> tokens) {
  Impl& m = *impl_;
  if (seq_ids.size() != lengths.size() || seq_ids.empty())
    return InvalidArgument("a forward takes one length per sequence, got " + std::to_string(seq_ids.size()) +
                           " sequences and " + std::to_string(lengths.size()) + " lengths");
  int64_t total = 0;
  bool decode = true;
  for (int64_t n : lengths) {
    total += n;
    decode &= n == 1;
  }
  if (total != static_cast<int64_t>(tokens.size()))
    return InvalidArgument("the lengths add up to " + std::to_string(total) + " tokens, " +
                           std::to_string(tokens.size()) + " given");
  HETRT_RETURN_IF_ERROR(m.CheckTokens(tokens, "token"));
  return m.ForwardOnCache(decode, seq_ids, lengths, tokens);
}

Result<std::vector<GenerationResult>> LlmEngine::Generate(std::vector<GenerationRequest> requests,
                                                          const std::function<void(const TokenEvent&)>& on_token) {
  std::vector<int64_t> ids;
  std::map<int64_t, size_t> slot;
  for (size_t i = 0; i < requests.size(); ++i) {
    auto id = AddRequest(std::move(requests[i]));
    if (!id.ok()) {
      for (int64_t added : ids) Cancel(added);
      return Status(id.status().code(), "request " + std::to_string(i) + ": " + id.status().message());
    }
    slot[*id] = i;
    ids.push_back(*id);
  }
  std::vector<GenerationResult> results(ids.size());
  const auto start = Clock::now();
  std::unordered_set<int64_t> left(ids.begin(), ids.end());
  while (!left.empty()) {
    auto events = Step();
    if (!events.ok()) {
      for (int64_t id : left) Cancel(id);
      return events.status();
    }
    for (const TokenEvent& e : *events) {
      auto it = slot.find(e.request);
      if (it == slot.end()) continue;
      GenerationResult& r = results[it->second];
      if (e.token >= 0) {
        if (r.tokens.empty()) r.time_to_first_token_s = Seconds(start);
        r.tokens.push_back(e.token);
      }
      if (e.finish != FinishReason::kNone) {
        r.finish = e.finish;
        r.error = e.error;
        r.seconds = Seconds(start);
        left.erase(e.request);
      }
      if (on_token) on_token(e);
    }
  }
  return results;
}

Result<std::vector<float>> LlmEngine::Logits(std::span<const int32_t> prompt) {
  Impl& m = *impl_;
  GenerationRequest probe;
  probe.prompt.assign(prompt.begin(), prompt.end());
  probe.max_tokens = 0;
  HETRT_RETURN_IF_ERROR(m.CheckRequest(probe));
  // A sequence of its own, prefilled chunk by chunk now, then removed.
  const int64_t id = m.next_id++;
  HETRT_RETURN_IF_ERROR(m.cache->AddSequence(id));
  std::vector<float> out;
  Status status = OkStatus();
  for (size_t at = 0; at < prompt.size() && status.ok();) {
    const size_t take = std::min<size_t>(prompt.size() - at, static_cast<size_t>(m.info.prefill_chunk_size));
    const int64_t ids[] = {id};
    const int64_t lengths[] = {static_cast<int64_t>(take)};
    auto rows = m.ForwardOnCache(/*decode=*/false, ids, lengths, prompt.subspan(at, take));
    if (!rows.ok()) {
      status = rows.status();
      break;
    }
    at += take;
    if (at == prompt.size()) out.assign(*rows, *rows + m.info.vocab_size);
  }
  Status removed = m.cache->RemoveSequence(id);
  HETRT_RETURN_IF_ERROR(status);
  HETRT_RETURN_IF_ERROR(removed);
  return out;
}

}  // namespace hetrt
