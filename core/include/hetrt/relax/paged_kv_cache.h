// TVM's paged KV cache (relax.vm.PagedAttentionKVCache) on a plugin device:
// what vm.builtin.paged_attention_kv_cache_create makes and the kv_state_* /
// attention_kv_cache_* builtins act on (docs/llm.md). The bookkeeping
// (sequences, blocks, pages, the per-forward arrays) is PagedKvLayout; this
// object owns the memory on the device -- one page tensor per layer, the
// attention temporaries and one buffer for the auxiliary arrays -- and calls
// the attention kernels the library handed over, in TVM's order.
//
// Memory comes from the device's plugin once, at creation: a forward
// allocates nothing. The auxiliary arrays reach the device in one copy per
// forward (none on a device that shares the host's memory), at the first
// attention call after begin_forward.
//
// Thread contract: thread-compatible; one thread at a time (the VM's).
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "hetrt/base/tensor.h"
#include "hetrt/device/device.h"
#include "hetrt/relax/paged_kv_layout.h"
#include "hetrt/relax/profile.h"
#include "hetrt/relax/value.h"
#include "hetrt/tvm_abi/global_functions.h"

namespace hetrt {

class Module;

// What the cache was created with (the create builtin's arguments, checked).
struct PagedKvCacheConfig {
  int64_t max_batch_size = 0;        // reserved_num_seqs
  int64_t total_token_capacity = 0;  // max_total_seq_len
  int64_t prefill_chunk_size = 0;
  int32_t page_size = 16;
  int64_t num_layers = 0;
  int64_t num_qo_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  enum class RopeMode : int { kNone = 0, kNormal = 1, kInline = 2 } rope_mode = RopeMode::kNormal;
  double rope_scale = 1;
  double rope_theta = 10000;
  DLDataType dtype{kDLFloat, 32, 1};
  DLDevice device{kDLCPU, 0};
  int64_t num_total_pages() const { return (total_token_capacity + page_size - 1) / page_size + 1; }
};

// The kernels of the library, one per slot the cache calls (NULL: absent).
struct PagedKvKernels {
  const PackedFunc* transpose_append = nullptr;  // slot 13
  const PackedFunc* prefill_ragged = nullptr;    // slot 15
  const PackedFunc* prefill_paged = nullptr;     // slot 16
  const PackedFunc* decode_paged = nullptr;      // slot 17
  const PackedFunc* merge = nullptr;             // slot 23 [0]
  const PackedFunc* split_rotary = nullptr;      // slot 24
  const PackedFunc* copy_single_page = nullptr;  // slot 25
};

class PagedKvCache final : public RelaxObject {
 public:
  static constexpr const char* kTypeKey = "relax.vm.PagedAttentionKVCache";
  // `keep_alive` holds the module tree the kernels belong to.
  static Result<std::shared_ptr<PagedKvCache>> Create(const PagedKvCacheConfig& config, const PagedKvKernels& kernels,
                                                      Tensor rope_ext_factors, Device device,
                                                      std::shared_ptr<Module> keep_alive);
  ~PagedKvCache() override;
  const char* type_key() const override { return kTypeKey; }

  const PagedKvCacheConfig& config() const { return config_; }
  const PagedKvLayout& layout() const { return layout_; }

  // ---- kv_state_*
  Status Clear();
  Status AddSequence(int64_t seq_id);
  Status RemoveSequence(int64_t seq_id);
  Status ForkSequence(int64_t parent, int64_t child, int64_t fork_pos);
  Status PopN(int64_t seq_id, int64_t n);
  Status BeginForward(std::span<const int64_t> seq_ids, std::span<const int64_t> append_lengths,
                      std::span<const int64_t> token_tree_parent_ptr = {});
  Status EndForward();
  Status CommitAcceptedTokenTreeNodes(std::span<const int64_t> seq_ids, std::span<const int64_t> leaf_indices);

  // ---- attention_kv_cache_*
  // One layer's attention over the forward's new tokens: qkv (N, Hq+2Hkv, D),
  // o (N, Hq, D) written; rows past the forward's tokens are left alone.
  Status AttentionWithFusedQkv(int64_t layer, double sm_scale, const DLTensor& qkv, const DLTensor& o);
  // The forward's query positions (int32, T) on the device.
  Result<Tensor> QueryPositions();
  int64_t num_available_pages() const { return layout_.num_available_pages(); }
  int64_t total_sequence_length() const { return layout_.total_sequence_length(); }
  bool empty() const { return layout_.empty(); }

  // Called before every kernel call the cache makes (nullptr: none). For
  // benchmarks' floors, as RelaxVirtualMachine::SetKernelObserver.
  void SetKernelObserver(RelaxKernelObserver observer) { kernel_observer_ = std::move(observer); }
  // Times every kernel call into `events` (nullptr: none), for `hetrt bench`.
  void SetProfile(std::vector<BuiltinKernelEvent>* events) { profile_ = events; }

  // Memory taken from the plugin at creation (pages, temporaries, aux arrays).
  uint64_t device_bytes() const { return device_bytes_; }

 private:
  // A DLTensor over memory the cache owns, re-shaped per forward without allocating.
  struct View {
    DLTensor dl{};
    std::array<int64_t, 5> shape{};
  };

  PagedKvCache() = default;
  Status SyncAuxArrays();
  Status GrowAuxArrays(int64_t entries);
  Status CopyPages(const std::vector<PageCopy>& copies);
  Status Call(const PackedFunc* kernel, const char* slot, hetrt_value_t* values, int32_t* codes, int32_t n);
  static void SetView(View& view, const DLTensor& base, uint64_t byte_offset, std::initializer_list<int64_t> shape,
                      DLDataType dtype);

  PagedKvCacheConfig config_;
  PagedKvKernels kernels_;
  PagedKvLayout layout_{1, 16, 1, 1};
  Device device_;
  std::shared_ptr<Module> keep_alive_;
  Tensor rope_ext_factors_;
  std::vector<Tensor> pages_;  // per layer (num_total_pages, 2, Hkv, P, D)
  Tensor q_, k_, v_, o_tmp_, lse_tmp_, lse_merged_;
  // The auxiliary arrays: int32, packed at 16-byte aligned offsets into one
  // buffer on the device; staged on the host first when the device's memory
  // is not the host's.
  Tensor aux_device_;
  Tensor aux_host_;  // undefined when the device shares the host's memory
  bool aux_dirty_ = false;
  bool forward_open_ = false;
  View q_rope_, append_pos_, cur_append_indptr_, k_ragged_rope_;
  std::array<View, 2> qo_indptr_, page_indptr_, page_indices_, last_page_len_, k_rope_offset_;
  View q_view_, k_view_, v_view_, o_tmp_view_, lse_tmp_view_, lse_merged_view_, qkv_view_, o_view_;
  std::vector<PageCopy> copies_;  // reused
  uint64_t device_bytes_ = 0;
  RelaxKernelObserver kernel_observer_;
  std::vector<BuiltinKernelEvent>* profile_ = nullptr;
};

}  // namespace hetrt
