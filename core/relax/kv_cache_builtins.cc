// The paged KV cache's builtins, by TVM name (docs/llm.md): creation from the
// 28 arguments TVM's TIRPagedKVCache passes (features hetrt does not run are
// refused here, by name, never answered wrongly later), kv_state_* and
// attention_kv_cache_*. Every builtin MLC-LLM's engine resolves is registered;
// the ones for features hetrt leaves out say so when called.
#include <array>

#include "hetrt/base/dtype.h"
#include "hetrt/relax/paged_kv_cache.h"
#include "relax/builtin_args.h"
#include "relax/interpreter.h"

namespace hetrt {
namespace {

using Kind = RelaxValue::Kind;

Result<PagedKvCache*> CacheArg(const RelaxCallArgs& args) {
  HETRT_RETURN_IF_ERROR(NeedArgs(args, 1));
  if (auto* cache = args[0].object_as<PagedKvCache>()) return cache;
  return WrongKind(0, "a paged KV cache (relax.vm.PagedAttentionKVCache)", args[0]);
}

Result<const std::vector<int64_t>*> ShapeArg(const RelaxCallArgs& args, uint32_t i) {
  if (i >= args.size()) return InvalidArgument("argument " + std::to_string(i) + " is missing");
  if (!args[i].is(Kind::kShape)) return WrongKind(i, "a shape", args[i]);
  return &args[i].shape();
}

// A kernel argument: a function of the library (FuncIdx), or NULL when the
// argument is not a function (TVM's "absent").
Result<const PackedFunc*> KernelArg(RelaxInterpreter& vm, const RelaxValue& v, const char* what) {
  if (!v.is(Kind::kFunction)) return static_cast<const PackedFunc*>(nullptr);
  const auto& callee = vm.callees[v.function()];
  if (callee.kind != RelaxInterpreter::Callee::Kind::kKernel)
    return InvalidArgument(std::string(what) + " is '" + vm.FunctionName(v.function()) +
                           "', which is not a compiled kernel of the library");
  return callee.kernel;
}

// An attention slot: () absent, ("tirx"|"tir", f) a kernel; FlashInfer refused.
Result<const PackedFunc*> AttentionSlot(RelaxInterpreter& vm, const RelaxCallArgs& args, uint32_t i) {
  const std::string what = "attention kernel argument " + std::to_string(i);
  if (!args[i].is(Kind::kTuple)) return WrongKind(i, "a tuple (backend, kernel...)", args[i]);
  const RelaxTuple& slot = args[i].tuple();
  if (slot.empty()) return static_cast<const PackedFunc*>(nullptr);
  const std::string backend = slot[0].is(Kind::kString) ? slot[0].string() : "";
  if (backend == "flashinfer")
    return Unimplemented(what +
                         " is a FlashInfer kernel, which hetrt does not run; build the library "
                         "with TVM's TIR attention (no FlashInfer)");
  if ((backend != "tirx" && backend != "tir") || slot.size() != 2 || !slot[1].is(Kind::kFunction))
    return InvalidArgument(what + " must be () or (\"tirx\", kernel), got a tuple of " + std::to_string(slot.size()));
  return KernelArg(vm, slot[1], what.c_str());
}

// paged_attention_kv_cache_create(28 or 29 arguments, docs/llm.md)
Status Create(RelaxInterpreter& vm, const RelaxCallArgs& args, RelaxValue* result) {
  if (args.size() != 28 && args.size() != 29)
    return InvalidArgument("takes 28 or 29 arguments (TVM v0.25's TIRPagedKVCache), got " +
                           std::to_string(args.size()));
  PagedKvCacheConfig c;
  HETRT_ASSIGN_OR_RETURN(const std::vector<int64_t>* sizes, ShapeArg(args, 0));
  if (sizes->size() != 5 && sizes->size() != 4)
    return InvalidArgument(
        "argument 0 must be [max_batch_size, max_total_seq_len, prefill_chunk_size, page_size, "
        "support_sliding_window], got " +
        ShapeToString(*sizes));
  c.max_batch_size = (*sizes)[0];
  c.total_token_capacity = (*sizes)[1];
  c.prefill_chunk_size = (*sizes)[2];
  c.page_size = static_cast<int32_t>(std::clamp<int64_t>((*sizes)[3], -1, 1 << 20));
  if (sizes->size() == 5 && (*sizes)[4] != 0)
    return Unimplemented("the KV cache asks for sliding-window attention (support_sliding_window = " +
                         std::to_string((*sizes)[4]) + "), which hetrt's KV cache does not support");
  HETRT_ASSIGN_OR_RETURN(const std::vector<int64_t>* partition, ShapeArg(args, 1));
  if (partition->size() < 2)
    return InvalidArgument("the KV cache's layer_partition " + ShapeToString(*partition) +
                           " names no layers: expected [0, num_layers]");
  if (partition->size() != 2)
    return Unimplemented("the KV cache is split into " + std::to_string(partition->size() - 1) +
                         " pipeline groups (layer_partition " + ShapeToString(*partition) + "); hetrt runs one group");
  if ((*partition)[0] != 0 || (*partition)[1] <= 0)
    return Unimplemented("the KV cache holds layers [" + std::to_string((*partition)[0]) + ", " +
                         std::to_string((*partition)[1]) + ") of a pipeline; hetrt runs whole models");
  c.num_layers = (*partition)[1];
  HETRT_ASSIGN_OR_RETURN(c.num_qo_heads, IntArg(args, 2));
  HETRT_ASSIGN_OR_RETURN(c.num_kv_heads, IntArg(args, 3));
  HETRT_ASSIGN_OR_RETURN(c.head_dim, IntArg(args, 4));
  HETRT_ASSIGN_OR_RETURN(int64_t v_head_dim, IntArg(args, 5));
  if (v_head_dim != c.head_dim)
    return Unimplemented("the KV cache's value head dim " + std::to_string(v_head_dim) + " differs from its key " +
                         "head dim " + std::to_string(c.head_dim) + " (MLA); hetrt runs multi-head attention");
  HETRT_ASSIGN_OR_RETURN(const std::vector<int64_t>* kinds, ShapeArg(args, 6));
  if (static_cast<int64_t>(kinds->size()) < c.num_layers)
    return InvalidArgument("argument 6 (attention kind per layer) has " + std::to_string(kinds->size()) +
                           " entries for " + std::to_string(c.num_layers) + " layers");
  for (size_t layer = 0; layer < kinds->size(); ++layer) {
    const int64_t kind = (*kinds)[layer];
    if (kind == 0) continue;
    const char* name = kind == 1   ? "MLA (multi-head latent attention)"
                       : kind == 2 ? "linear attention"
                       : kind == 3 ? "per-layer sliding-window attention (MHA_SLIDING)"
                                   : "an unknown attention kind";
    return Unimplemented("layer " + std::to_string(layer) + " of the KV cache uses " + name +
                         ", which hetrt's KV cache does not support (only multi-head attention)");
  }
  HETRT_ASSIGN_OR_RETURN(int64_t disaggregation, IntArg(args, 7));
  if (disaggregation != 0)
    return Unimplemented(
        "the KV cache asks for prefill/decode disaggregation (NVSHMEM KV transfer), which hetrt "
        "does not support");
  HETRT_ASSIGN_OR_RETURN(int64_t rope_mode, IntArg(args, 8));
  if (rope_mode < 0 || rope_mode > 2)
    return InvalidArgument("rope_mode " + std::to_string(rope_mode) + " (0 none, 1 normal, 2 inline)");
  c.rope_mode = static_cast<PagedKvCacheConfig::RopeMode>(rope_mode);
  HETRT_ASSIGN_OR_RETURN(c.rope_scale, RealArg(args, 9));
  HETRT_ASSIGN_OR_RETURN(c.rope_theta, RealArg(args, 10));
  Tensor ext_factors;
  if (args[11].is(Kind::kTensor)) {
    if (c.rope_mode != PagedKvCacheConfig::RopeMode::kNormal)
      return InvalidArgument("RoPE extension factors need rope_mode 1 (normal), got " + std::to_string(rope_mode));
    ext_factors = args[11].tensor();
  }
  HETRT_ASSIGN_OR_RETURN(const Tensor* init, TensorArg(args, 12));
  c.dtype = init->dtype();
  c.device = init->device();
  const int device_index = vm.IndexOf(c.device);
  if (device_index < 0)
    return InvalidArgument("the KV cache's dtype tensor is on " + DeviceToString(c.device) +
                           ", which is not one of the VM's devices");

  PagedKvKernels k;
  HETRT_ASSIGN_OR_RETURN(k.transpose_append, KernelArg(vm, args[13], "argument 13 (append)"));
  HETRT_ASSIGN_OR_RETURN(k.prefill_ragged, AttentionSlot(vm, args, 15));
  HETRT_ASSIGN_OR_RETURN(k.prefill_paged, AttentionSlot(vm, args, 16));
  HETRT_ASSIGN_OR_RETURN(k.decode_paged, AttentionSlot(vm, args, 17));
  for (uint32_t i : {18u, 19u, 20u, 21u, 22u})  // sliding window, tree, MLA: stored by TVM, unused here
    HETRT_RETURN_IF_ERROR(AttentionSlot(vm, args, i).status());
  if (!args[23].is(Kind::kTuple) || args[23].tuple().empty())
    return WrongKind(23, "a non-empty tuple of merge kernels", args[23]);
  HETRT_ASSIGN_OR_RETURN(k.merge, KernelArg(vm, args[23].tuple()[0], "argument 23 (merge)"));
  HETRT_ASSIGN_OR_RETURN(k.split_rotary, KernelArg(vm, args[24], "argument 24 (split_rotary)"));
  HETRT_ASSIGN_OR_RETURN(k.copy_single_page, KernelArg(vm, args[25], "argument 25 (copy_single_page)"));
  HETRT_ASSIGN_OR_RETURN(auto cache,
                         PagedKvCache::Create(c, k, std::move(ext_factors),
                                              vm.devices[static_cast<size_t>(device_index)].device, vm.root));
  *result = RelaxValue::FromObject(std::move(cache));
  return OkStatus();
}

Status Done(RelaxValue* result) {
  *result = RelaxValue();
  return OkStatus();
}

// The builtins that take the cache alone, or the cache and a sequence id.
template <Status (PagedKvCache::*Method)()>
Status OnCache(RelaxInterpreter&, const RelaxCallArgs& args, RelaxValue* result) {
  HETRT_ASSIGN_OR_RETURN(PagedKvCache * cache, CacheArg(args));
  HETRT_RETURN_IF_ERROR((cache->*Method)());
  return Done(result);
}

template <Status (PagedKvCache::*Method)(int64_t)>
Status OnSequence(RelaxInterpreter&, const RelaxCallArgs& args, RelaxValue* result) {
  HETRT_ASSIGN_OR_RETURN(PagedKvCache * cache, CacheArg(args));
  HETRT_ASSIGN_OR_RETURN(int64_t id, IntArg(args, 1));
  HETRT_RETURN_IF_ERROR((cache->*Method)(id));
  return Done(result);
}

Status ForkSequence(RelaxInterpreter&, const RelaxCallArgs& args, RelaxValue* result) {
  HETRT_ASSIGN_OR_RETURN(PagedKvCache * cache, CacheArg(args));
  HETRT_ASSIGN_OR_RETURN(int64_t parent, IntArg(args, 1));
  HETRT_ASSIGN_OR_RETURN(int64_t child, IntArg(args, 2));
  HETRT_ASSIGN_OR_RETURN(int64_t position, IntArg(args, 3));
  HETRT_RETURN_IF_ERROR(cache->ForkSequence(parent, child, position));
  return Done(result);
}

Status PopN(RelaxInterpreter&, const RelaxCallArgs& args, RelaxValue* result) {
  HETRT_ASSIGN_OR_RETURN(PagedKvCache * cache, CacheArg(args));
  HETRT_ASSIGN_OR_RETURN(int64_t id, IntArg(args, 1));
  HETRT_ASSIGN_OR_RETURN(int64_t n, IntArg(args, 2));
  HETRT_RETURN_IF_ERROR(cache->PopN(id, n));
  return Done(result);
}

// begin_forward(cache, seq_ids, append_lengths[, token_tree_parent_ptr])
Status BeginForward(RelaxInterpreter&, const RelaxCallArgs& args, RelaxValue* result) {
  HETRT_ASSIGN_OR_RETURN(PagedKvCache * cache, CacheArg(args));
  if (args.size() != 3 && args.size() != 4)
    return InvalidArgument("takes (cache, seq_ids, append_lengths[, token_tree_parent_ptr]), got " +
                           std::to_string(args.size()) + " arguments");
  HETRT_ASSIGN_OR_RETURN(const std::vector<int64_t>* ids, ShapeArg(args, 1));
  HETRT_ASSIGN_OR_RETURN(const std::vector<int64_t>* lengths, ShapeArg(args, 2));
  std::span<const int64_t> tree;
  if (args.size() == 4 && !args[3].is_null()) {
    HETRT_ASSIGN_OR_RETURN(const std::vector<int64_t>* parents, ShapeArg(args, 3));
    tree = *parents;
  }
  HETRT_RETURN_IF_ERROR(cache->BeginForward(*ids, *lengths, tree));
  return Done(result);
}

// attention_with_fused_qkv(cache, layer, sm_scale, qkv, o): o written
Status AttentionWithFusedQkv(RelaxInterpreter&, const RelaxCallArgs& args, RelaxValue* result) {
  HETRT_ASSIGN_OR_RETURN(PagedKvCache * cache, CacheArg(args));
  HETRT_RETURN_IF_ERROR(NeedArgs(args, 5));
  HETRT_ASSIGN_OR_RETURN(int64_t layer, IntArg(args, 1));
  HETRT_ASSIGN_OR_RETURN(double sm_scale, RealArg(args, 2));
  HETRT_ASSIGN_OR_RETURN(const Tensor* qkv, TensorArg(args, 3));
  HETRT_ASSIGN_OR_RETURN(const Tensor* o, TensorArg(args, 4));
  HETRT_RETURN_IF_ERROR(cache->AttentionWithFusedQkv(layer, sm_scale, *qkv->dl(), *o->dl()));
  return Done(result);
}

// The cache's counters as ints (empty() as 0/1).
template <typename T, T (PagedKvCache::*Get)() const>
Status Count(RelaxInterpreter&, const RelaxCallArgs& args, RelaxValue* result) {
  HETRT_ASSIGN_OR_RETURN(PagedKvCache * cache, CacheArg(args));
  *result = RelaxValue::Int(static_cast<int64_t>((cache->*Get)()));
  return OkStatus();
}

Status QueryPositions(RelaxInterpreter&, const RelaxCallArgs& args, RelaxValue* result) {
  HETRT_ASSIGN_OR_RETURN(PagedKvCache * cache, CacheArg(args));
  HETRT_ASSIGN_OR_RETURN(Tensor positions, cache->QueryPositions());
  *result = RelaxValue::FromTensor(std::move(positions));
  return OkStatus();
}

Status CommitTokenTree(RelaxInterpreter&, const RelaxCallArgs& args, RelaxValue* result) {
  HETRT_ASSIGN_OR_RETURN(PagedKvCache * cache, CacheArg(args));
  HETRT_ASSIGN_OR_RETURN(const std::vector<int64_t>* ids, ShapeArg(args, 1));
  HETRT_ASSIGN_OR_RETURN(const std::vector<int64_t>* leaves, ShapeArg(args, 2));
  HETRT_RETURN_IF_ERROR(cache->CommitAcceptedTokenTreeNodes(*ids, *leaves));
  return Done(result);
}

// Registered because MLC-LLM's engine resolves them at load; refused when called.
#define HETRT_KV_REFUSED(Name, what)                                                       \
  Status Name(RelaxInterpreter&, const RelaxCallArgs&, RelaxValue*) {                      \
    return Unimplemented(std::string(what) + ", which hetrt's KV cache does not support"); \
  }
HETRT_KV_REFUSED(SlidingWindow, "sliding-window attention (attention_kv_cache_enable_sliding_window_for_seq)")
HETRT_KV_REFUSED(DisaggPrepareRecv, "prefill/decode disaggregation (kv_cache_disagg_prepare_recv)")
HETRT_KV_REFUSED(DisaggMarkSend, "prefill/decode disaggregation (kv_cache_disagg_mark_send)")
HETRT_KV_REFUSED(SelfAttention, "split self/cross attention for MLA-style models (attention_kv_cache_self_attention)")
HETRT_KV_REFUSED(CrossAttention, "split self/cross attention for MLA-style models (attention_kv_cache_cross_attention)")
HETRT_KV_REFUSED(AppendMla, "MLA (attention_kv_cache_append_mla_kv)")
HETRT_KV_REFUSED(MergeInplace, "MLA's output merge (attention_kv_cache_merge_attn_output_inplace)")
HETRT_KV_REFUSED(DebugGetKv, "reading K/V back (attention_kv_cache_debug_get_kv)")
HETRT_KV_REFUSED(DebugGetKvMla, "MLA (attention_kv_cache_debug_get_kv_mla)")
#undef HETRT_KV_REFUSED

constexpr std::array kKvCacheBuiltins = {
    NamedRelaxBuiltin{"vm.builtin.paged_attention_kv_cache_create", &Create},
    NamedRelaxBuiltin{"vm.builtin.kv_state_clear", &OnCache<&PagedKvCache::Clear>},
    NamedRelaxBuiltin{"vm.builtin.kv_state_add_sequence", &OnSequence<&PagedKvCache::AddSequence>},
    NamedRelaxBuiltin{"vm.builtin.kv_state_remove_sequence", &OnSequence<&PagedKvCache::RemoveSequence>},
    NamedRelaxBuiltin{"vm.builtin.kv_state_fork_sequence", &ForkSequence},
    NamedRelaxBuiltin{"vm.builtin.kv_state_popn", &PopN},
    NamedRelaxBuiltin{"vm.builtin.kv_state_begin_forward", &BeginForward},
    NamedRelaxBuiltin{"vm.builtin.kv_state_end_forward", &OnCache<&PagedKvCache::EndForward>},
    NamedRelaxBuiltin{"vm.builtin.attention_kv_cache_attention_with_fused_qkv", &AttentionWithFusedQkv},
    NamedRelaxBuiltin{"vm.builtin.attention_kv_cache_get_num_available_pages",
                      &Count<int64_t, &PagedKvCache::num_available_pages>},
    NamedRelaxBuiltin{"vm.builtin.attention_kv_cache_get_total_sequence_length",
                      &Count<int64_t, &PagedKvCache::total_sequence_length>},
    NamedRelaxBuiltin{"vm.builtin.attention_kv_cache_empty", &Count<bool, &PagedKvCache::empty>},
    NamedRelaxBuiltin{"vm.builtin.attention_kv_cache_get_query_positions", &QueryPositions},
    NamedRelaxBuiltin{"vm.builtin.attention_kv_cache_commit_accepted_token_tree_nodes", &CommitTokenTree},
    NamedRelaxBuiltin{"vm.builtin.attention_kv_cache_enable_sliding_window_for_seq", &SlidingWindow},
    NamedRelaxBuiltin{"vm.builtin.kv_cache_disagg_prepare_recv", &DisaggPrepareRecv},
    NamedRelaxBuiltin{"vm.builtin.kv_cache_disagg_mark_send", &DisaggMarkSend},
    NamedRelaxBuiltin{"vm.builtin.attention_kv_cache_self_attention", &SelfAttention},
    NamedRelaxBuiltin{"vm.builtin.attention_kv_cache_cross_attention", &CrossAttention},
    NamedRelaxBuiltin{"vm.builtin.attention_kv_cache_append_mla_kv", &AppendMla},
    NamedRelaxBuiltin{"vm.builtin.attention_kv_cache_merge_attn_output_inplace", &MergeInplace},
    NamedRelaxBuiltin{"vm.builtin.attention_kv_cache_debug_get_kv", &DebugGetKv},
    NamedRelaxBuiltin{"vm.builtin.attention_kv_cache_debug_get_kv_mla", &DebugGetKvMla},
};

}  // namespace

std::span<const NamedRelaxBuiltin> KvCacheRelaxBuiltins() { return kKvCacheBuiltins; }

}  // namespace hetrt
