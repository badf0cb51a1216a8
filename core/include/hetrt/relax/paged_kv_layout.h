// The host-side bookkeeping of TVM's paged KV cache (relax.vm.PagedAttentionKVCache,
// TVM v0.25): sequences, the blocks they are made of, the pages the blocks own,
// fork / popn / remove, and the auxiliary arrays one begin_forward hands to the
// attention kernels (docs/llm-runtime.md §2.4-2.12, in TVM's exact semantics:
// page ids, positions and array contents are the ones TVM computes).
//
// No device code: PagedKvCache owns the page tensors and copies what this class
// reports (PageCopy) and what plan() holds. Not supported (the creator refuses
// them): sliding window, attention sinks, MLA, disaggregation. Token trees only
// as chains (parent[n] = n - 1): a branching tree is refused, since hetrt does
// not run tree attention.
//
// Unlike TVM, a call that fails leaves the layout exactly as it was: everything
// is checked before anything changes. After warm-up, BeginForward of a batch
// seen before allocates no host memory (its vectors keep their capacity).
//
// Thread contract: thread-compatible; one thread at a time (the VM's).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "hetrt/base/status.h"

namespace hetrt {

// Copy slots [0, length) of page src_page into page dst_page, in every layer
// (slot 25, kv_cache_copy_single_page): a fork inside a page.
struct PageCopy {
  int32_t src_page = 0;
  int32_t dst_page = 0;
  int32_t length = 0;
  bool operator==(const PageCopy&) const = default;
};

// One attention depth of a forward (depth 0: each sequence's root block; depth
// 1: the next block followed by all deeper blocks). One entry per chunk: a
// sequence, or neighbouring sequences that share the depth-0 block (coalesced).
struct KvForwardDepth {
  std::vector<int32_t> qo_indptr;          // chunks + 1: prefix sums of the chunks' new tokens
  std::vector<int32_t> page_indptr;        // chunks + 1: prefix sums of page counts
  std::vector<int32_t> page_indices;       // the chunks' page ids, in block order
  std::vector<int32_t> last_page_len;      // chunks: length_info (1-D, no sliding window)
  std::vector<int32_t> k_rope_pos_offset;  // chunks: start position of the chunk's block
  bool use_decode_kernel = false;          // paged decode kernel (else paged prefill, causal 0)
};

// What BeginForward computed: the host copies of the arrays TVM syncs to the
// device (§2.8.1), all int32 as the kernels take them.
struct KvForwardPlan {
  std::vector<int64_t> seq_ids, append_lengths;  // the batch, in its order
  int64_t total_length = 0;                      // T: new tokens
  bool is_decode = false;                        // every append length is 1
  // Append K/V before attention (the page tables then include the new tokens);
  // otherwise ragged self-attention first, append after.
  bool append_before_attn = false;
  int num_depths = 0;  // depths [0, num_depths) are valid (0 < num_depths <= 2)
  std::array<KvForwardDepth, 2> depths;
  std::vector<int32_t> q_rope_position_map;       // T: position of each new token
  std::vector<int32_t> append_position_map;       // T: page_id * page_size + slot
  std::vector<int32_t> cur_append_length_indptr;  // B + 1
  std::vector<int32_t> k_ragged_rope_pos_offset;  // B: length before this forward (less an uncommitted tree)
};

class PagedKvLayout {
 public:
  static constexpr int kMaxBlockDepth = 2;  // kPagedKVCacheMaxBlockDepth
  static constexpr int kMaxTreeSize = 256;  // kTreeAttnMaxTreeSize: nodes per sequence

  // Why a configuration cannot be used (non-positive sizes, or positions that
  // would not fit int32); the constructor assumes it passed.
  static Status CheckConfig(int64_t num_total_pages, int32_t page_size, int64_t max_batch_size,
                            int64_t prefill_chunk_size);
  // num_total_pages as TVM derives it: ceil(capacity / page_size) + 1.
  PagedKvLayout(int64_t num_total_pages, int32_t page_size, int64_t max_batch_size, int64_t prefill_chunk_size);

  // ---- kv_state_*
  // A new empty sequence; ids < 0 are refused (reserved for popn's temporary fork).
  Status AddSequence(int64_t seq_id);
  // Frees the sequence's own blocks and pages (up to the first shared block).
  Status RemoveSequence(int64_t seq_id);
  // `child` shares `parent`'s first fork_pos tokens (-1: all). `copies` is set
  // to the page copies the device must do before the next forward (at most one).
  Status ForkSequence(int64_t parent, int64_t child, int64_t fork_pos, std::vector<PageCopy>* copies);
  // Drops the last n tokens (0 <= n <= length). `copies` as for ForkSequence:
  // popping into a shared block re-forks the sequence.
  Status PopN(int64_t seq_id, int64_t n, std::vector<PageCopy>* copies);
  // No sequences, every page free.
  void Clear();
  // Grows each sequence by its append length (reserving pages) and computes
  // plan(). token_tree_parent_ptr: empty for none, else one parent per new
  // token (sequence after sequence), chains only.
  Status BeginForward(std::span<const int64_t> seq_ids, std::span<const int64_t> append_lengths,
                      std::span<const int64_t> token_tree_parent_ptr = {});
  // Keeps token-tree nodes [0, leaf] of each sequence (leaf -1: none) and pops
  // the rest of its uncommitted tree; the sequence is committed again.
  Status CommitAcceptedTokenTreeNodes(std::span<const int64_t> seq_ids, std::span<const int64_t> leaf_indices);

  // The last BeginForward's arrays; valid while has_forward(): from a
  // successful BeginForward to the next call that changes the layout.
  const KvForwardPlan& plan() const { return plan_; }
  bool has_forward() const { return has_forward_; }

  // ---- queries
  int64_t num_available_pages() const { return static_cast<int64_t>(free_pages_.size()); }
  int64_t total_sequence_length() const;
  bool empty() const;
  Result<int64_t> SequenceLength(int64_t seq_id) const;
  bool HasSequence(int64_t seq_id) const { return sequences_.count(seq_id) != 0; }
  int64_t num_sequences() const { return static_cast<int64_t>(sequences_.size()); }
  int64_t num_total_pages() const { return num_total_pages_; }
  int32_t page_size() const { return page_size_; }
  int64_t max_batch_size() const { return max_batch_size_; }
  int64_t prefill_chunk_size() const { return prefill_chunk_size_; }
  // Sequences, blocks and pages (free list in order): for error messages and
  // tests; equal strings mean equal layouts.
  std::string DebugString() const;

 private:
  // A block's pages, in order, are a list threaded through next_page_ (each
  // page belongs to at most one block), so growing a block never allocates.
  struct Block {
    int32_t first_page = -1, last_page = -1;
    int32_t num_pages = 0;  // all full but the last
    int32_t seq_length = 0;
    int32_t start_pos = 0;  // absolute position of the first token
    int32_t parent = -1;
    int32_t ref_count = 0;  // sequences and blocks referring to it; > 1: read-only
  };
  struct Sequence {
    int32_t last_block = -1;
    int64_t length = 0;
    bool committed = true;  // no token tree awaiting CommitAcceptedTokenTreeNodes
    int64_t tree_size = 0;  // nodes of the uncommitted chain (node n has depth n)
  };
  // Where a fork at `pos` lands: the block that holds it and the offset in it;
  // block -1 with new_leaf: a new empty leaf the parent gets first.
  struct ForkSite {
    bool new_leaf = false;
    int32_t block = -1;
    int64_t offset = 0;
  };
  // What PopN would do: pop `remaining` more through a fork when the
  // sequence's own blocks do not hold n tokens.
  struct PopPlan {
    int64_t remaining = 0;
    int64_t freed_pages = 0;
    int32_t shared_block = -1;  // the sequence's leaf after its own blocks went
    int64_t length_left = 0;    // the sequence's length at that point
  };

  int32_t NewBlock();
  int32_t TakeFreePage();
  void AppendPage(Block& block, int32_t page);
  int32_t PageAt(const Block& block, int64_t index) const;
  void FreePages(const Block& block);                        // in block order
  void ShrinkPages(Block& block, int64_t keep);              // the last pages, last first
  void SplitPages(Block& head, Block& tail, int32_t count);  // tail's first count pages go to head
  void AppendPageIds(const Block& block, std::vector<int32_t>* out) const;
  void ChainToRoot(int32_t leaf, std::vector<int32_t>* trace) const;  // leaf first
  ForkSite LocateFork(int32_t leaf, int64_t length, int64_t pos) const;
  PopPlan PlanPopN(const Sequence& seq, int64_t n) const;
  Status CheckFork(const Sequence& parent, int64_t parent_id, int32_t leaf, int64_t length, int64_t pos,
                   int64_t extra_free_pages, const char* what) const;
  void ForkUnchecked(int64_t parent_id, int64_t child_id, int64_t pos, std::vector<PageCopy>* copies);
  void RemoveUnchecked(int64_t seq_id);
  void PopNUnchecked(int64_t seq_id, int64_t n, std::vector<PageCopy>* copies);
  Status CheckForward(std::span<const int64_t> seq_ids, std::span<const int64_t> append_lengths,
                      std::span<const int64_t> tree);
  void Reserve(Sequence& seq, int64_t n);
  void BuildChunks(int d);
  void BuildDepthArrays(int d);

  int64_t num_total_pages_ = 0;
  int32_t page_size_ = 16;
  int64_t max_batch_size_ = 0;
  int64_t prefill_chunk_size_ = 0;

  std::vector<int32_t> free_pages_;  // popped from the back
  std::vector<int32_t> next_page_;   // per page: the next page of its block, -1 after the last
  std::unordered_map<int64_t, Sequence> sequences_;
  std::vector<Block> blocks_;
  std::vector<int32_t> free_blocks_;  // popped from the back

  KvForwardPlan plan_;
  bool has_forward_ = false;

  // BeginForward's scratch, kept for its capacity.
  std::vector<Sequence*> batch_;
  std::vector<int64_t> sorted_ids_;
  std::vector<int32_t> trace_;
  std::array<std::vector<int32_t>, 2> block_ids_on_depth_;
  std::vector<int32_t> trailing_blocks_, trailing_indptr_;          // blocks below depth 1, per sequence
  std::array<std::vector<std::pair<int32_t, int64_t>>, 2> chunks_;  // (block, new tokens) per depth
};

}  // namespace hetrt
