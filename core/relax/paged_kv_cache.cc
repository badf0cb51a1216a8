#include "hetrt/relax/paged_kv_cache.h"

#include <cstring>

#include "hetrt/base/dtype.h"
#include "hetrt/base/host_clock.h"
#include "hetrt/module/module.h"
#include "hetrt/tvm_abi/tvm_ffi_context.h"
#include "hetrt/tvm_abi/tvm_ffi_values.h"

namespace hetrt {
namespace {

// Offsets of the auxiliary arrays in their buffer are multiples of 16 bytes
// (4 int32), as TVM packs them; the query positions come first (offset 0),
// since get_query_positions hands that view to Relax code.
int64_t Align4(int64_t n) { return (n + 3) / 4 * 4; }

hetrt_value_t TensorValue(const DLTensor* t) {
  hetrt_value_t v;
  v.v_handle = const_cast<DLTensor*>(t);
  return v;
}
hetrt_value_t IntValue(int64_t i) {
  hetrt_value_t v;
  v.v_int64 = i;
  return v;
}
hetrt_value_t FloatValue(double f) {
  hetrt_value_t v;
  v.v_float64 = f;
  return v;
}

// A packed argument list built on the stack: tensors, ints and doubles.
class KernelArgs {
 public:
  KernelArgs& Tensor(const DLTensor& t) { return Push(TensorValue(&t), HETRT_TYPE_DLTENSOR); }
  KernelArgs& Int(int64_t i) { return Push(IntValue(i), HETRT_TYPE_INT); }
  KernelArgs& Float(double f) { return Push(FloatValue(f), HETRT_TYPE_FLOAT); }
  hetrt_value_t* values() { return values_.data(); }
  int32_t* codes() { return codes_.data(); }
  int32_t size() const { return size_; }

 private:
  KernelArgs& Push(hetrt_value_t v, int32_t code) {
    values_[static_cast<size_t>(size_)] = v;
    codes_[static_cast<size_t>(size_++)] = code;
    return *this;
  }
  std::array<hetrt_value_t, 20> values_{};
  std::array<int32_t, 20> codes_{};
  int32_t size_ = 0;
};

bool SameType(DLDataType a, DLDataType b) { return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes; }

std::string Dims(const DLTensor& t) { return ShapeToString(std::vector<int64_t>(t.shape, t.shape + t.ndim)); }

}  // namespace

PagedKvCache::~PagedKvCache() = default;

void PagedKvCache::SetView(View& view, const DLTensor& base, uint64_t byte_offset, std::initializer_list<int64_t> shape,
                           DLDataType dtype) {
  view.dl = base;
  std::copy(shape.begin(), shape.end(), view.shape.begin());
  view.dl.shape = view.shape.data();
  view.dl.ndim = static_cast<int32_t>(shape.size());
  view.dl.strides = nullptr;
  view.dl.dtype = dtype;
  view.dl.byte_offset = base.byte_offset + byte_offset;
}

Result<std::shared_ptr<PagedKvCache>> PagedKvCache::Create(const PagedKvCacheConfig& config,
                                                           const PagedKvKernels& kernels, Tensor rope_ext_factors,
                                                           Device device, std::shared_ptr<Module> keep_alive) {
  const PagedKvCacheConfig& c = config;
  if (c.max_batch_size <= 0 || c.total_token_capacity <= 0 || c.prefill_chunk_size <= 0 || c.page_size <= 0)
    return InvalidArgument("KV cache sizes must be positive: max_batch_size " + std::to_string(c.max_batch_size) +
                           ", max_total_seq_len " + std::to_string(c.total_token_capacity) + ", prefill_chunk_size " +
                           std::to_string(c.prefill_chunk_size) + ", page_size " + std::to_string(c.page_size));
  if (c.num_layers <= 0 || c.num_qo_heads <= 0 || c.num_kv_heads <= 0 || c.head_dim <= 0 ||
      c.num_qo_heads % c.num_kv_heads != 0)
    return InvalidArgument("KV cache of " + std::to_string(c.num_layers) + " layers, " +
                           std::to_string(c.num_qo_heads) + " query heads, " + std::to_string(c.num_kv_heads) +
                           " KV heads, head dim " + std::to_string(c.head_dim) +
                           ": all must be positive and the query heads a multiple of the KV heads");
  // Bounds that keep every size below in int64 and the positions in int32.
  if (c.total_token_capacity > (int64_t{1} << 30) || c.max_batch_size > (1 << 20) || c.prefill_chunk_size > (1 << 24) ||
      c.page_size > (1 << 16) || c.num_layers > 4096 || c.num_qo_heads > 4096 || c.head_dim > 4096)
    return InvalidArgument("KV cache configuration out of range (capacity " + std::to_string(c.total_token_capacity) +
                           " tokens, batch " + std::to_string(c.max_batch_size) + ", chunk " +
                           std::to_string(c.prefill_chunk_size) + ")");
  struct Required {
    const PackedFunc* kernel;
    const char* what;
  };
  for (const Required& r : {Required{kernels.transpose_append, "f_transpose_append (argument 13)"},
                            Required{kernels.prefill_ragged, "the ragged prefill kernel (argument 15)"},
                            Required{kernels.prefill_paged, "the paged prefill kernel (argument 16)"},
                            Required{kernels.decode_paged, "the paged decode kernel (argument 17)"},
                            Required{kernels.merge, "the merge kernel (argument 23)"},
                            Required{kernels.split_rotary, "f_split_rotary (argument 24)"}})
    if (r.kernel == nullptr) return InvalidArgument("the KV cache needs " + std::string(r.what) + ", which is absent");

  HETRT_RETURN_IF_ERROR(PagedKvLayout::CheckConfig(c.num_total_pages(), c.page_size, c.max_batch_size,
                                                  c.prefill_chunk_size));
  std::shared_ptr<PagedKvCache> cache(new PagedKvCache());
  cache->config_ = c;
  cache->kernels_ = kernels;
  cache->device_ = device;
  cache->keep_alive_ = std::move(keep_alive);
  cache->rope_ext_factors_ = std::move(rope_ext_factors);
  const int64_t pages = c.num_total_pages();
  cache->layout_ = PagedKvLayout(pages, c.page_size, c.max_batch_size, c.prefill_chunk_size);
  Allocator& allocator = device.allocator();
  const std::string where = " on " + DeviceToString(c.device);
  auto take = [&](std::vector<int64_t> shape, DLDataType dtype, const char* what) -> Result<Tensor> {
    HETRT_ASSIGN_OR_RETURN(Tensor t, Tensor::Empty(shape, dtype, allocator),
                           std::string("allocating the KV cache's ") + what + " " + ShapeToString(shape) + where);
    cache->device_bytes_ += t.nbytes();
    return t;
  };
  for (int64_t layer = 0; layer < c.num_layers; ++layer) {
    HETRT_ASSIGN_OR_RETURN(Tensor t, take({pages, 2, c.num_kv_heads, c.page_size, c.head_dim}, c.dtype, "pages"));
    cache->pages_.push_back(std::move(t));
  }
  const int64_t chunk = c.prefill_chunk_size;
  HETRT_ASSIGN_OR_RETURN(cache->q_, take({chunk, c.num_qo_heads, c.head_dim}, c.dtype, "queries"));
  HETRT_ASSIGN_OR_RETURN(cache->k_, take({chunk, c.num_kv_heads, c.head_dim}, c.dtype, "keys"));
  HETRT_ASSIGN_OR_RETURN(cache->v_, take({chunk, c.num_kv_heads, c.head_dim}, c.dtype, "values"));
  HETRT_ASSIGN_OR_RETURN(cache->o_tmp_, take({chunk, c.num_qo_heads, c.head_dim}, c.dtype, "attention output"));
  HETRT_ASSIGN_OR_RETURN(cache->lse_tmp_, take({chunk, c.num_qo_heads}, kFloat32, "log-sum-exp"));
  HETRT_ASSIGN_OR_RETURN(cache->lse_merged_, take({chunk, c.num_qo_heads}, kFloat32, "log-sum-exp"));
  const int64_t batch = c.max_batch_size;
  // Sized for a batch without shared prefixes; SyncAuxArrays grows it for more.
  const int64_t per_depth = 2 * Align4(batch + 1) + Align4(pages) + 2 * Align4(batch);
  const int64_t aux = Align4(chunk) + 2 * per_depth + Align4(batch + 1) + Align4(batch) + Align4(chunk);
  HETRT_RETURN_IF_ERROR(cache->GrowAuxArrays(aux));
  return cache;
}

Status PagedKvCache::GrowAuxArrays(int64_t entries) {
  const std::string where =
      "the KV cache's auxiliary arrays (" + std::to_string(entries) + " int32) on " + DeviceToString(config_.device);
  if (aux_device_.defined()) {  // kernels queued before may still read the old one
    if (config_.device.device_type != kDLCPU && device_.CanSynchronize())
      HETRT_RETURN_IF_ERROR(device_.Synchronize(nullptr), "waiting for " + DeviceToString(config_.device));
    device_bytes_ -= aux_device_.nbytes();
  }
  HETRT_ASSIGN_OR_RETURN(aux_device_, Tensor::Empty({entries}, kInt32, device_.allocator()), "allocating " + where);
  device_bytes_ += aux_device_.nbytes();
  if (config_.device.device_type == kDLCPU) return OkStatus();  // written in place
  auto staged = Tensor::Empty({entries}, kInt32, device_.allocator(HETRT_MEMORY_HOST_PINNED));
  if (staged.ok()) {
    aux_host_ = std::move(staged).value();
  } else {
    HETRT_ASSIGN_OR_RETURN(aux_host_, Tensor::EmptyHost({entries}, kInt32), "staging " + where);
  }
  return OkStatus();
}

// ---- sequences

Status PagedKvCache::Clear() {
  layout_.Clear();
  aux_dirty_ = true;
  forward_open_ = false;
  return OkStatus();
}

Status PagedKvCache::AddSequence(int64_t seq_id) {
  HETRT_RETURN_IF_ERROR(layout_.AddSequence(seq_id));
  aux_dirty_ = true;
  return OkStatus();
}

Status PagedKvCache::RemoveSequence(int64_t seq_id) {
  HETRT_RETURN_IF_ERROR(layout_.RemoveSequence(seq_id));
  aux_dirty_ = true;
  forward_open_ = false;
  return OkStatus();
}

Status PagedKvCache::ForkSequence(int64_t parent, int64_t child, int64_t fork_pos) {
  copies_.clear();
  HETRT_RETURN_IF_ERROR(layout_.ForkSequence(parent, child, fork_pos, &copies_));
  aux_dirty_ = true;
  forward_open_ = false;
  return CopyPages(copies_);
}

Status PagedKvCache::PopN(int64_t seq_id, int64_t n) {
  copies_.clear();
  HETRT_RETURN_IF_ERROR(layout_.PopN(seq_id, n, &copies_));
  aux_dirty_ = true;
  forward_open_ = false;
  return CopyPages(copies_);
}

Status PagedKvCache::CopyPages(const std::vector<PageCopy>& copies) {
  if (copies.empty()) return OkStatus();
  if (kernels_.copy_single_page == nullptr)
    return Unimplemented("forking inside a page needs the library's page-copy kernel (argument 25), which is absent");
  for (const PageCopy& copy : copies)
    for (const Tensor& pages : pages_) {
      KernelArgs a;
      a.Tensor(*pages.dl()).Int(copy.src_page).Int(copy.dst_page).Int(copy.length);
      HETRT_RETURN_IF_ERROR(Call(kernels_.copy_single_page, "copy_single_page", a.values(), a.codes(), a.size()));
    }
  return OkStatus();
}

Status PagedKvCache::BeginForward(std::span<const int64_t> seq_ids, std::span<const int64_t> append_lengths,
                                  std::span<const int64_t> token_tree_parent_ptr) {
  HETRT_RETURN_IF_ERROR(layout_.BeginForward(seq_ids, append_lengths, token_tree_parent_ptr));
  aux_dirty_ = true;
  forward_open_ = true;
  return OkStatus();
}

Status PagedKvCache::EndForward() { return OkStatus(); }

Status PagedKvCache::CommitAcceptedTokenTreeNodes(std::span<const int64_t> seq_ids,
                                                  std::span<const int64_t> leaf_indices) {
  HETRT_RETURN_IF_ERROR(layout_.CommitAcceptedTokenTreeNodes(seq_ids, leaf_indices));
  aux_dirty_ = true;
  forward_open_ = false;
  return OkStatus();
}

// ---- the forward

Status PagedKvCache::SyncAuxArrays() {
  if (!aux_dirty_) return OkStatus();
  const KvForwardPlan& plan = layout_.plan();
  // Shared prefixes list their pages once per sequence, so a forward may need
  // more than the buffer holds: it grows then (the only allocation after creation).
  int64_t needed = Align4(static_cast<int64_t>(plan.q_rope_position_map.size())) +
                   Align4(static_cast<int64_t>(plan.cur_append_length_indptr.size())) +
                   Align4(static_cast<int64_t>(plan.k_ragged_rope_pos_offset.size())) +
                   Align4(static_cast<int64_t>(plan.append_position_map.size()));
  for (int d = 0; d < plan.num_depths; ++d) {
    const KvForwardDepth& depth = plan.depths[d];
    for (const std::vector<int32_t>* a :
         {&depth.qo_indptr, &depth.page_indptr, &depth.page_indices, &depth.last_page_len, &depth.k_rope_pos_offset})
      needed += Align4(static_cast<int64_t>(a->size()));
  }
  if (needed > aux_device_.shape()[0])
    HETRT_RETURN_IF_ERROR(GrowAuxArrays(std::max(needed, 2 * aux_device_.shape()[0])));
  int32_t* host = aux_host_.defined() ? aux_host_.data_as<int32_t>() : aux_device_.data_as<int32_t>();
  const DLTensor& base = *aux_device_.dl();
  int64_t at = 0;  // in int32 elements
  auto put = [&](View& view, const std::vector<int32_t>& values) {
    std::memcpy(host + at, values.data(), values.size() * sizeof(int32_t));
    SetView(view, base, static_cast<uint64_t>(at) * 4, {static_cast<int64_t>(values.size())}, kInt32);
    at += Align4(static_cast<int64_t>(values.size()));
  };
  put(q_rope_, plan.q_rope_position_map);
  for (int d = 0; d < plan.num_depths; ++d) put(qo_indptr_[d], plan.depths[d].qo_indptr);
  for (int d = 0; d < plan.num_depths; ++d) put(page_indptr_[d], plan.depths[d].page_indptr);
  for (int d = 0; d < plan.num_depths; ++d) put(page_indices_[d], plan.depths[d].page_indices);
  for (int d = 0; d < plan.num_depths; ++d) put(last_page_len_[d], plan.depths[d].last_page_len);
  for (int d = 0; d < plan.num_depths; ++d) put(k_rope_offset_[d], plan.depths[d].k_rope_pos_offset);
  put(cur_append_indptr_, plan.cur_append_length_indptr);
  put(k_ragged_rope_, plan.k_ragged_rope_pos_offset);
  put(append_pos_, plan.append_position_map);
  if (aux_host_.defined())
    HETRT_RETURN_IF_ERROR(device_.Copy(aux_host_.data(), 0, aux_host_.device(), aux_device_.data(), 0,
                                       aux_device_.device(), static_cast<uint64_t>(at) * 4),
                          "copying the KV cache's auxiliary arrays to " + DeviceToString(config_.device));
  const int64_t t = plan.total_length;
  SetView(q_view_, *q_.dl(), 0, {t, config_.num_qo_heads, config_.head_dim}, config_.dtype);
  SetView(k_view_, *k_.dl(), 0, {t, config_.num_kv_heads, config_.head_dim}, config_.dtype);
  SetView(v_view_, *v_.dl(), 0, {t, config_.num_kv_heads, config_.head_dim}, config_.dtype);
  SetView(o_tmp_view_, *o_tmp_.dl(), 0, {t, config_.num_qo_heads, config_.head_dim}, config_.dtype);
  SetView(lse_tmp_view_, *lse_tmp_.dl(), 0, {t, config_.num_qo_heads}, kFloat32);
  SetView(lse_merged_view_, *lse_merged_.dl(), 0, {t, config_.num_qo_heads}, kFloat32);
  aux_dirty_ = false;
  return OkStatus();
}

Status PagedKvCache::Call(const PackedFunc* kernel, const char* slot, hetrt_value_t* values, int32_t* codes,
                          int32_t n) {
  if (kernel_observer_) [[unlikely]]
    kernel_observer_(*kernel, values, codes, n);
  if (profile_ != nullptr) [[unlikely]] {
    BuiltinKernelEvent event{slot, config_.device, HostNowNs(), 0};
    Status s = CallPackedFunc(*kernel, values, codes, n);
    if (s.ok() && config_.device.device_type != kDLCPU && device_.CanSynchronize())
      s = device_.Synchronize(nullptr);  // the kernel's time, not its launch
    event.end_ns = HostNowNs();
    profile_->push_back(event);
    if (!s.ok()) return s.WithContext(std::string("the KV cache's ") + slot + " kernel");
    return OkStatus();
  }
  // A tvm-ffi kernel (TVM v0.22+ libraries) is called directly, its tensors
  // and numbers converted here rather than through the packed adapter: a
  // decode step makes six of these calls per layer pair.
  constexpr int32_t kDirectArgs = 32;
  if (hetrt_ffi_safe_call_t ffi = FfiSafeCallOf(*kernel); ffi != nullptr && n <= kDirectArgs) {
    hetrt_ffi_any_t anys[kDirectArgs];
    bool converted = true;
    for (int32_t i = 0; i < n && converted; ++i) converted = PackedArgToFfiAny(values[i], codes[i], anys[i]);
    if (converted) {
      hetrt_ffi_any_t ret{};
      Status s = FfiKernelOutcome(ffi(nullptr, anys, n, &ret), ret);
      if (!s.ok()) return s.WithContext(std::string("the KV cache's ") + slot + " kernel");
      return OkStatus();
    }
  }
  Status s = CallPackedFunc(*kernel, values, codes, n);
  if (!s.ok()) return s.WithContext(std::string("the KV cache's ") + slot + " kernel");
  return OkStatus();
}

Status PagedKvCache::AttentionWithFusedQkv(int64_t layer, double sm_scale, const DLTensor& qkv, const DLTensor& o) {
  const PagedKvCacheConfig& c = config_;
  if (!forward_open_)
    return FailedPrecondition("attention on the KV cache outside a forward: call kv_state_begin_forward first");
  if (layer < 0 || layer >= c.num_layers)
    return OutOfRange("layer " + std::to_string(layer) + " of a KV cache with " + std::to_string(c.num_layers) +
                      " layers");
  if (!SameType(qkv.dtype, c.dtype) || !SameType(o.dtype, c.dtype))
    return InvalidArgument("attention on " + DataTypeToString(qkv.dtype) + " qkv / " + DataTypeToString(o.dtype) +
                           " output, but the KV cache holds " + DataTypeToString(c.dtype));
  if (!SameDevice(qkv.device, c.device) || !SameDevice(o.device, c.device))
    return InvalidArgument("attention inputs on " + DeviceToString(qkv.device) + " for a KV cache on " +
                           DeviceToString(c.device));
  const int64_t heads = c.num_qo_heads + 2 * c.num_kv_heads;
  if (qkv.ndim != 3 || qkv.shape[1] != heads || qkv.shape[2] != c.head_dim || o.ndim != 3 ||
      o.shape[0] != qkv.shape[0] || o.shape[1] != c.num_qo_heads || o.shape[2] != c.head_dim)
    return InvalidArgument("attention takes qkv (N, " + std::to_string(heads) + ", " + std::to_string(c.head_dim) +
                           ") and an output (N, " + std::to_string(c.num_qo_heads) + ", " + std::to_string(c.head_dim) +
                           "), got qkv " + Dims(qkv) + " and output " + Dims(o));
  if (qkv.strides != nullptr || o.strides != nullptr)
    return InvalidArgument("attention takes compact qkv and output tensors");
  const KvForwardPlan& plan = layout_.plan();
  const int64_t t = plan.total_length;
  if (t > qkv.shape[0])
    return InvalidArgument("the forward has " + std::to_string(t) + " new tokens but qkv holds " +
                           std::to_string(qkv.shape[0]) + " rows");
  HETRT_RETURN_IF_ERROR(SyncAuxArrays());
  SetView(qkv_view_, qkv, 0, {t, heads, c.head_dim}, c.dtype);
  SetView(o_view_, o, 0, {t, c.num_qo_heads, c.head_dim}, c.dtype);
  const DLTensor& pages = *pages_[static_cast<size_t>(layer)].dl();
  const int64_t rotary_mode = c.rope_mode == PagedKvCacheConfig::RopeMode::kInline ? 1 : 0;

  {  // split the fused qkv, RoPE on q and k
    KernelArgs a;
    a.Tensor(qkv_view_.dl).Tensor(q_rope_.dl).Tensor(q_view_.dl).Tensor(k_view_.dl).Tensor(v_view_.dl);
    if (rope_ext_factors_.defined())
      a.Tensor(*rope_ext_factors_.dl());
    else
      a.Int(c.rope_mode == PagedKvCacheConfig::RopeMode::kNormal ? 1 : 0);
    HETRT_RETURN_IF_ERROR(Call(kernels_.split_rotary, "split_rotary", a.values(), a.codes(), a.size()));
  }
  auto append = [&]() -> Status {
    KernelArgs a;
    a.Tensor(pages).Tensor(k_view_.dl).Tensor(v_view_.dl).Tensor(append_pos_.dl);
    return Call(kernels_.transpose_append, "transpose_append", a.values(), a.codes(), a.size());
  };
  if (plan.append_before_attn) HETRT_RETURN_IF_ERROR(append());

  bool first = true;
  if (!plan.append_before_attn) {  // the new tokens among themselves, causal
    KernelArgs a;
    a.Tensor(q_view_.dl).Tensor(cur_append_indptr_.dl).Tensor(k_view_.dl).Tensor(v_view_.dl);
    a.Tensor(cur_append_indptr_.dl).Tensor(q_rope_.dl).Tensor(k_ragged_rope_.dl).Tensor(o_view_.dl);
    a.Tensor(lse_merged_view_.dl).Int(1).Int(rotary_mode).Float(c.rope_scale).Float(c.rope_theta).Float(sm_scale);
    HETRT_RETURN_IF_ERROR(Call(kernels_.prefill_ragged, "ragged prefill", a.values(), a.codes(), a.size()));
    first = false;
  }
  bool cross = false;
  for (int d = 0; d < plan.num_depths; ++d) {  // the new tokens against the pages, per block depth
    if (page_indices_[d].shape[0] == 0) continue;
    const DLTensor& out = first ? o_view_.dl : o_tmp_view_.dl;
    const DLTensor& lse = first ? lse_merged_view_.dl : lse_tmp_view_.dl;
    KernelArgs a;
    if (plan.depths[d].use_decode_kernel) {
      a.Tensor(q_view_.dl).Tensor(pages).Tensor(page_indptr_[d].dl).Tensor(page_indices_[d].dl);
      a.Tensor(last_page_len_[d].dl).Tensor(k_rope_offset_[d].dl).Tensor(q_rope_.dl).Tensor(out).Tensor(lse);
      a.Int(rotary_mode).Float(c.rope_scale).Float(c.rope_theta).Float(sm_scale);
      HETRT_RETURN_IF_ERROR(Call(kernels_.decode_paged, "paged decode", a.values(), a.codes(), a.size()));
    } else {
      a.Tensor(q_view_.dl).Tensor(qo_indptr_[d].dl).Tensor(pages).Tensor(page_indptr_[d].dl);
      a.Tensor(page_indices_[d].dl).Tensor(last_page_len_[d].dl).Tensor(k_rope_offset_[d].dl).Tensor(q_rope_.dl);
      a.Tensor(out).Tensor(lse).Int(0).Int(rotary_mode).Float(c.rope_scale).Float(c.rope_theta).Float(sm_scale);
      HETRT_RETURN_IF_ERROR(Call(kernels_.prefill_paged, "paged prefill", a.values(), a.codes(), a.size()));
    }
    if (!first) {
      KernelArgs m;
      m.Tensor(o_view_.dl).Tensor(lse_merged_view_.dl).Tensor(o_tmp_view_.dl).Tensor(lse_tmp_view_.dl);
      HETRT_RETURN_IF_ERROR(Call(kernels_.merge, "merge", m.values(), m.codes(), m.size()));
    }
    first = false;
    cross = true;
  }
  if (plan.append_before_attn && !cross)
    return Internal("the forward attended to nothing (no new tokens and no cached pages)");
  if (!plan.append_before_attn) HETRT_RETURN_IF_ERROR(append());
  return OkStatus();
}

Result<Tensor> PagedKvCache::QueryPositions() {
  if (!forward_open_) return FailedPrecondition("query positions outside a forward: call kv_state_begin_forward first");
  HETRT_RETURN_IF_ERROR(SyncAuxArrays());
  return aux_device_.View({layout_.plan().total_length}, kInt32, 0);
}

}  // namespace hetrt
