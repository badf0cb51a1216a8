// TVM v0.25's paged-KV-cache bookkeeping (src/runtime/vm/paged_kv_cache.cc and
// attn_utils.h), rewritten from its documented behaviour (docs/llm-runtime.md
// §2.4-2.12): the same page ids, block structure and auxiliary arrays, with
// every check made before the layout changes.
#include "hetrt/relax/paged_kv_layout.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <map>

namespace hetrt {

namespace {

std::string Str(int64_t v) { return std::to_string(v); }

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// "[8..2 5 9]": runs of three or more consecutive ids (up or down) as a..b.
std::string FormatIds(const std::vector<int32_t>& ids) {
  std::string out = "[";
  for (size_t i = 0; i < ids.size();) {
    size_t j = i + 1;
    const int64_t step = j < ids.size() ? int64_t{ids[j]} - ids[i] : 0;
    if (step == 1 || step == -1) {
      while (j < ids.size() && int64_t{ids[j]} - ids[j - 1] == step) ++j;
    }
    if (i > 0) out += ' ';
    if (j - i >= 3) {
      out += Str(ids[i]) + ".." + Str(ids[j - 1]);
    } else {
      j = i + 1;
      out += Str(ids[i]);
    }
    i = j;
  }
  return out + "]";
}

Status CacheFull(int64_t needed, int64_t free) {
  return ResourceExhausted("the KV cache is full: " + Str(needed) + " pages needed, " + Str(free) + " free");
}

}  // namespace

Status PagedKvLayout::CheckConfig(int64_t num_total_pages, int32_t page_size, int64_t max_batch_size,
                                  int64_t prefill_chunk_size) {
  if (page_size <= 0) return InvalidArgument("paged KV cache: page size " + Str(page_size) + " must be positive");
  if (num_total_pages <= 0)
    return InvalidArgument("paged KV cache: " + Str(num_total_pages) + " pages; at least one is needed");
  if (max_batch_size <= 0)
    return InvalidArgument("paged KV cache: max_batch_size " + Str(max_batch_size) + " must be positive");
  if (prefill_chunk_size <= 0)
    return InvalidArgument("paged KV cache: prefill_chunk_size " + Str(prefill_chunk_size) + " must be positive");
  constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
  if (num_total_pages > kInt32Max / page_size)
    return InvalidArgument("paged KV cache: " + Str(num_total_pages) + " pages of " + Str(page_size) +
                           " tokens: positions (page * page_size + slot) would not fit int32");
  if (prefill_chunk_size > kInt32Max)
    return InvalidArgument("paged KV cache: prefill_chunk_size " + Str(prefill_chunk_size) + " does not fit int32");
  return OkStatus();
}

PagedKvLayout::PagedKvLayout(int64_t num_total_pages, int32_t page_size, int64_t max_batch_size,
                             int64_t prefill_chunk_size)
    : num_total_pages_(num_total_pages),
      page_size_(page_size),
      max_batch_size_(max_batch_size),
      prefill_chunk_size_(prefill_chunk_size) {
  assert(CheckConfig(num_total_pages, page_size, max_batch_size, prefill_chunk_size).ok());
  free_pages_.reserve(static_cast<size_t>(num_total_pages));
  next_page_.assign(static_cast<size_t>(num_total_pages), -1);
  Clear();
  // The sizes TVM's host staging vectors start with: a forward within them
  // allocates nothing, the first one included.
  const auto b = static_cast<size_t>(max_batch_size);
  const auto t = static_cast<size_t>(prefill_chunk_size);
  batch_.reserve(b);
  sorted_ids_.reserve(b);
  trailing_indptr_.reserve(b + 1);
  plan_.seq_ids.reserve(b);
  plan_.append_lengths.reserve(b);
  plan_.cur_append_length_indptr.reserve(b + 1);
  plan_.k_ragged_rope_pos_offset.reserve(b);
  plan_.q_rope_position_map.reserve(t);
  plan_.append_position_map.reserve(t);
  for (int d = 0; d < kMaxBlockDepth; ++d) {
    block_ids_on_depth_[d].reserve(b);
    chunks_[d].reserve(b);
    KvForwardDepth& depth = plan_.depths[d];
    depth.qo_indptr.reserve(b + 1);
    depth.page_indptr.reserve(b + 1);
    depth.page_indices.reserve(static_cast<size_t>(num_total_pages));
    depth.last_page_len.reserve(b);
    depth.k_rope_pos_offset.reserve(b);
  }
}

// ---------------------------------------------------------------- blocks and pages

int32_t PagedKvLayout::NewBlock() {
  if (!free_blocks_.empty()) {
    const int32_t index = free_blocks_.back();
    free_blocks_.pop_back();
    blocks_[index] = Block();
    return index;
  }
  blocks_.emplace_back();
  return static_cast<int32_t>(blocks_.size() - 1);
}

int32_t PagedKvLayout::TakeFreePage() {
  assert(!free_pages_.empty());
  const int32_t page = free_pages_.back();
  free_pages_.pop_back();
  return page;
}

void PagedKvLayout::AppendPage(Block& block, int32_t page) {
  next_page_[page] = -1;
  if (block.num_pages == 0) {
    block.first_page = page;
  } else {
    next_page_[block.last_page] = page;
  }
  block.last_page = page;
  ++block.num_pages;
}

int32_t PagedKvLayout::PageAt(const Block& block, int64_t index) const {
  assert(index >= 0 && index < block.num_pages);
  int32_t page = block.first_page;
  for (int64_t i = 0; i < index; ++i) page = next_page_[page];
  return page;
}

void PagedKvLayout::FreePages(const Block& block) {
  for (int32_t p = block.first_page, i = 0; i < block.num_pages; p = next_page_[p], ++i) free_pages_.push_back(p);
}

void PagedKvLayout::ShrinkPages(Block& block, int64_t keep) {
  if (keep >= block.num_pages) return;
  // TVM pops them off the back one by one: the last page is freed first.
  const int32_t last_kept = keep == 0 ? -1 : PageAt(block, keep - 1);
  const auto dropped = static_cast<size_t>(block.num_pages - keep);
  const size_t end = free_pages_.size() + dropped;
  free_pages_.resize(end);  // within the capacity reserved for every page
  int32_t p = last_kept == -1 ? block.first_page : next_page_[last_kept];
  for (size_t i = 1; i <= dropped; ++i, p = next_page_[p]) free_pages_[end - i] = p;
  block.num_pages = static_cast<int32_t>(keep);
  block.last_page = last_kept;
  if (last_kept == -1) {
    block.first_page = -1;
  } else {
    next_page_[last_kept] = -1;
  }
}

void PagedKvLayout::SplitPages(Block& head, Block& tail, int32_t count) {
  assert(head.num_pages == 0 && count > 0 && count <= tail.num_pages);
  const int32_t last_moved = PageAt(tail, count - 1);
  head.first_page = tail.first_page;
  head.last_page = last_moved;
  head.num_pages = count;
  tail.num_pages -= count;
  tail.first_page = tail.num_pages == 0 ? -1 : next_page_[last_moved];
  if (tail.num_pages == 0) tail.last_page = -1;
  next_page_[last_moved] = -1;
}

void PagedKvLayout::AppendPageIds(const Block& block, std::vector<int32_t>* out) const {
  for (int32_t p = block.first_page, i = 0; i < block.num_pages; p = next_page_[p], ++i) out->push_back(p);
}

void PagedKvLayout::ChainToRoot(int32_t leaf, std::vector<int32_t>* trace) const {
  trace->clear();
  for (int32_t b = leaf; b != -1; b = blocks_[b].parent) trace->push_back(b);
}

void PagedKvLayout::Clear() {
  sequences_.clear();
  blocks_.clear();
  free_blocks_.clear();
  free_pages_.clear();
  for (int64_t page = num_total_pages_ - 1; page >= 0; --page) free_pages_.push_back(static_cast<int32_t>(page));
  has_forward_ = false;
}

// ---------------------------------------------------------------- sequences

Status PagedKvLayout::AddSequence(int64_t seq_id) {
  if (seq_id < 0)
    return InvalidArgument("add_sequence: sequence id " + Str(seq_id) +
                           " is negative; ids < 0 are reserved for the cache's own use (popn forks into -1 - id)");
  if (HasSequence(seq_id))
    return InvalidArgument("add_sequence: sequence " + Str(seq_id) + " is already in the KV cache");
  const int32_t block = NewBlock();
  blocks_[block].ref_count = 1;
  Sequence seq;
  seq.last_block = block;
  sequences_.emplace(seq_id, seq);
  has_forward_ = false;
  return OkStatus();
}

Status PagedKvLayout::RemoveSequence(int64_t seq_id) {
  if (!HasSequence(seq_id)) return NotFound("remove_sequence: sequence " + Str(seq_id) + " is not in the KV cache");
  RemoveUnchecked(seq_id);
  has_forward_ = false;
  return OkStatus();
}

void PagedKvLayout::RemoveUnchecked(int64_t seq_id) {
  auto it = sequences_.find(seq_id);
  int32_t b = it->second.last_block;
  assert(blocks_[b].ref_count >= 1);
  // The sequence's own blocks (referred to once) go, leaf first; the first
  // shared ancestor loses one reference.
  while (b != -1 && blocks_[b].ref_count == 1) {
    FreePages(blocks_[b]);
    free_blocks_.push_back(b);
    b = blocks_[b].parent;
  }
  if (b != -1) {
    assert(blocks_[b].ref_count > 1);
    --blocks_[b].ref_count;
  }
  sequences_.erase(it);
}

Result<int64_t> PagedKvLayout::SequenceLength(int64_t seq_id) const {
  auto it = sequences_.find(seq_id);
  if (it == sequences_.end()) return NotFound("sequence " + Str(seq_id) + " is not in the KV cache");
  return it->second.length;
}

int64_t PagedKvLayout::total_sequence_length() const {
  int64_t total = 0;
  for (const auto& [id, seq] : sequences_) total += seq.length;
  return total;
}

bool PagedKvLayout::empty() const {
  return sequences_.empty() && free_blocks_.size() == blocks_.size() &&
         static_cast<int64_t>(free_pages_.size()) == num_total_pages_;
}

// ---------------------------------------------------------------- fork

PagedKvLayout::ForkSite PagedKvLayout::LocateFork(int32_t leaf, int64_t length, int64_t pos) const {
  ForkSite site;
  // A fork at the very end, on a page boundary, of a non-empty leaf: the
  // parent first gets a new empty leaf (so it can keep growing), and the child
  // hangs under the old one.
  if (pos == length && pos % page_size_ == 0 && blocks_[leaf].seq_length > 0) {
    site.new_leaf = true;
    return site;
  }
  // Root to leaf: skip whole blocks that end at or before pos (never the leaf).
  std::vector<int32_t> trace;
  ChainToRoot(leaf, &trace);
  int64_t offset = pos;
  for (auto it = trace.rbegin(); it != trace.rend(); ++it) {
    if (*it != leaf && blocks_[*it].seq_length <= offset) {
      offset -= blocks_[*it].seq_length;
      continue;
    }
    site.block = *it;
    site.offset = offset;
    break;
  }
  return site;
}

Status PagedKvLayout::CheckFork(const Sequence& parent, int64_t parent_id, int32_t leaf, int64_t length, int64_t pos,
                                int64_t extra_free_pages, const char* what) const {
  if (!parent.committed)
    return FailedPrecondition(std::string(what) + ": sequence " + Str(parent_id) + " has an uncommitted token tree (" +
                              Str(parent.tree_size) + " nodes); call commit_accepted_token_tree_nodes first");
  const ForkSite site = LocateFork(leaf, length, pos);
  const int64_t in_page = site.new_leaf ? 0 : site.offset % page_size_;
  const int64_t free = static_cast<int64_t>(free_pages_.size()) + extra_free_pages;
  if (in_page > 0 && free < 1)
    return CacheFull(1, free).WithContext(std::string(what) + " of sequence " + Str(parent_id) + " at position " +
                                          Str(pos) + " copies a partial page");
  return OkStatus();
}

Status PagedKvLayout::ForkSequence(int64_t parent, int64_t child, int64_t fork_pos, std::vector<PageCopy>* copies) {
  if (copies == nullptr) return InvalidArgument("fork_sequence: no list for the page copies");
  if (child < 0)
    return InvalidArgument("fork_sequence: child sequence id " + Str(child) +
                           " is negative; ids < 0 are reserved for the cache's own use (popn forks into -1 - id)");
  auto it = sequences_.find(parent);
  if (it == sequences_.end())
    return NotFound("fork_sequence: parent sequence " + Str(parent) + " is not in the KV cache");
  if (HasSequence(child))
    return InvalidArgument("fork_sequence: child sequence " + Str(child) + " is already in the KV cache");
  const Sequence& seq = it->second;
  if (fork_pos < -1 || fork_pos > seq.length)
    return OutOfRange("fork_sequence: fork position " + Str(fork_pos) + " of sequence " + Str(parent) + " (length " +
                      Str(seq.length) + ") must be in [0, " + Str(seq.length) + "], or -1 for the end");
  const int64_t pos = fork_pos == -1 ? seq.length : fork_pos;
  HETRT_RETURN_IF_ERROR(CheckFork(seq, parent, seq.last_block, seq.length, pos, 0, "fork_sequence"));
  copies->clear();
  ForkUnchecked(parent, child, pos, copies);
  has_forward_ = false;
  return OkStatus();
}

void PagedKvLayout::ForkUnchecked(int64_t parent_id, int64_t child_id, int64_t pos, std::vector<PageCopy>* copies) {
  Sequence& parent = sequences_.at(parent_id);
  ForkSite site = LocateFork(parent.last_block, parent.length, pos);
  if (site.new_leaf) {
    const int32_t leaf = NewBlock();
    blocks_[leaf].start_pos = static_cast<int32_t>(parent.length);
    blocks_[leaf].parent = parent.last_block;
    blocks_[leaf].ref_count = 1;
    parent.last_block = leaf;
    site.block = leaf;
    site.offset = 0;
  }
  const int32_t child_block = NewBlock();
  const int32_t forked = site.block;
  const auto in_page = static_cast<int32_t>(site.offset % page_size_);
  const auto moved_offset = static_cast<int32_t>(site.offset - in_page);
  const int32_t moved_pages = moved_offset / page_size_;
  if (moved_pages == 0) {
    // Within the block's first page: the child hangs under the block's parent.
    const int32_t above = blocks_[forked].parent;
    if (above != -1) ++blocks_[above].ref_count;
    blocks_[child_block].parent = above;
  } else {
    // Split: a new block takes the first moved_pages full pages and becomes the
    // parent of both the rest of the block and the child.
    const int32_t split = NewBlock();
    Block& head = blocks_[split];
    Block& tail = blocks_[forked];
    head.parent = tail.parent;
    tail.parent = split;
    blocks_[child_block].parent = split;
    head.ref_count = 2;
    SplitPages(head, tail, moved_pages);
    head.start_pos = tail.start_pos;
    tail.start_pos += moved_offset;
    head.seq_length = moved_offset;
    tail.seq_length -= moved_offset;
  }
  blocks_[child_block].start_pos = static_cast<int32_t>(pos) - in_page;
  blocks_[child_block].seq_length = in_page;
  if (in_page > 0) {
    // The shared partial page is copied into a page of the child's own.
    const int32_t src = blocks_[forked].first_page;
    const int32_t dst = TakeFreePage();
    AppendPage(blocks_[child_block], dst);
    assert(copies != nullptr);
    copies->push_back({src, dst, in_page});
  }
  Sequence child;
  child.last_block = child_block;
  ++blocks_[child_block].ref_count;
  for (int32_t b = child_block; b != -1; b = blocks_[b].parent) child.length += blocks_[b].seq_length;
  sequences_.emplace(child_id, child);
}

// ---------------------------------------------------------------- popn

PagedKvLayout::PopPlan PagedKvLayout::PlanPopN(const Sequence& seq, int64_t n) const {
  PopPlan plan;
  plan.length_left = seq.length;
  int32_t b = seq.last_block;
  while (b != -1 && blocks_[b].ref_count == 1) {
    const Block& block = blocks_[b];
    if (n > block.seq_length) {
      n -= block.seq_length;
      plan.length_left -= block.seq_length;
      plan.freed_pages += block.num_pages;
      b = block.parent;
      continue;
    }
    plan.freed_pages += block.num_pages - CeilDiv(block.seq_length - n, page_size_);
    plan.length_left -= n;
    n = 0;
    break;
  }
  plan.remaining = n;
  plan.shared_block = b;
  return plan;
}

Status PagedKvLayout::PopN(int64_t seq_id, int64_t n, std::vector<PageCopy>* copies) {
  if (copies == nullptr) return InvalidArgument("popn: no list for the page copies");
  auto it = sequences_.find(seq_id);
  if (it == sequences_.end()) return NotFound("popn: sequence " + Str(seq_id) + " is not in the KV cache");
  const Sequence& seq = it->second;
  if (n < 0 || n > seq.length)
    return OutOfRange("popn: cannot pop " + Str(n) + " tokens from sequence " + Str(seq_id) + " of length " +
                      Str(seq.length) + " (0 <= n <= length)");
  if (n == 0) {
    copies->clear();
    return OkStatus();
  }
  const PopPlan plan = PlanPopN(seq, n);
  if (plan.remaining > 0) {
    // The tokens reach into a shared block: the rest is popped by forking a
    // temporary sequence at length - n (after the sequence's own blocks went).
    HETRT_RETURN_IF_ERROR(CheckFork(seq, seq_id, plan.shared_block, plan.length_left, plan.length_left - plan.remaining,
                                    plan.freed_pages, "popn"));
  }
  copies->clear();
  PopNUnchecked(seq_id, n, copies);
  has_forward_ = false;
  return OkStatus();
}

void PagedKvLayout::PopNUnchecked(int64_t seq_id, int64_t n, std::vector<PageCopy>* copies) {
  Sequence& seq = sequences_.at(seq_id);
  int32_t b = seq.last_block;
  while (b != -1 && blocks_[b].ref_count == 1) {
    Block& block = blocks_[b];
    if (n > block.seq_length) {
      // The whole block goes; the sequence now ends in its parent, taking over
      // the reference the block held.
      n -= block.seq_length;
      seq.length -= block.seq_length;
      FreePages(block);
      free_blocks_.push_back(b);
      b = block.parent;
      seq.last_block = b;
      continue;
    }
    ShrinkPages(block, CeilDiv(block.seq_length - n, page_size_));
    seq.length -= n;
    block.seq_length -= static_cast<int32_t>(n);
    n = 0;
    break;
  }
  if (n > 0) {
    // Fork -1 - id at the new length, drop the original, rename the fork.
    const int64_t temp_id = -1 - seq_id;
    ForkUnchecked(seq_id, temp_id, seq.length - n, copies);
    RemoveUnchecked(seq_id);
    auto node = sequences_.extract(temp_id);
    node.key() = seq_id;
    sequences_.insert(std::move(node));
  }
}

// ---------------------------------------------------------------- begin_forward

Status PagedKvLayout::CheckForward(std::span<const int64_t> seq_ids, std::span<const int64_t> append_lengths,
                                   std::span<const int64_t> tree) {
  if (seq_ids.size() != append_lengths.size())
    return InvalidArgument("begin_forward: " + Str(static_cast<int64_t>(seq_ids.size())) + " sequence ids but " +
                           Str(static_cast<int64_t>(append_lengths.size())) + " append lengths");
  if (seq_ids.empty()) return InvalidArgument("begin_forward: no sequences");
  const auto batch = static_cast<int64_t>(seq_ids.size());
  if (batch > max_batch_size_)
    return InvalidArgument("begin_forward of " + Str(batch) + " sequences exceeds the cache's max_batch_size " +
                           Str(max_batch_size_));
  batch_.clear();
  int64_t total = 0;
  for (size_t i = 0; i < seq_ids.size(); ++i) {
    auto it = sequences_.find(seq_ids[i]);
    if (it == sequences_.end())
      return NotFound("begin_forward: sequence " + Str(seq_ids[i]) + " is not in the KV cache");
    const int64_t length = append_lengths[i];
    if (length <= 0)
      return InvalidArgument("begin_forward: append length " + Str(length) + " of sequence " + Str(seq_ids[i]) +
                             " must be positive (list only sequences with new tokens)");
    if (length > prefill_chunk_size_)
      return InvalidArgument("begin_forward: " + Str(length) + " new tokens of sequence " + Str(seq_ids[i]) +
                             " exceed prefill_chunk_size " + Str(prefill_chunk_size_) +
                             "; chunk the prefill into forwards of at most that many tokens");
    total += length;
    batch_.push_back(&it->second);
  }
  sorted_ids_.assign(seq_ids.begin(), seq_ids.end());
  std::sort(sorted_ids_.begin(), sorted_ids_.end());
  auto dup = std::adjacent_find(sorted_ids_.begin(), sorted_ids_.end());
  if (dup != sorted_ids_.end()) return InvalidArgument("begin_forward lists sequence " + Str(*dup) + " twice");
  if (total > prefill_chunk_size_)
    return InvalidArgument("begin_forward of " + Str(total) + " new tokens exceeds prefill_chunk_size " +
                           Str(prefill_chunk_size_) + "; chunk the prefill into forwards of at most that many tokens");

  if (!tree.empty()) {
    if (static_cast<int64_t>(tree.size()) != total)
      return InvalidArgument("begin_forward: token tree of " + Str(static_cast<int64_t>(tree.size())) +
                             " parent entries for " + Str(total) + " new tokens");
    size_t offset = 0;
    for (size_t i = 0; i < batch_.size(); ++i) {
      const Sequence& seq = *batch_[i];
      const int64_t length = append_lengths[i];
      // An uncommitted tree grows: new nodes are numbered after its nodes.
      const int64_t old_size = seq.committed ? 0 : seq.tree_size;
      if (old_size + length > kMaxTreeSize)
        return InvalidArgument("begin_forward: token tree of sequence " + Str(seq_ids[i]) + " would have " +
                               Str(old_size + length) + " nodes; at most " + Str(kMaxTreeSize));
      if (old_size > blocks_[seq.last_block].seq_length)
        return FailedPrecondition("begin_forward: token tree of sequence " + Str(seq_ids[i]) + " (" + Str(old_size) +
                                  " nodes) is longer than its last block");
      for (int64_t k = 0; k < length; ++k) {
        const int64_t node = old_size + k;
        const int64_t parent = tree[offset + k];
        if (parent < -1 || parent >= node)
          return InvalidArgument("begin_forward: token tree of sequence " + Str(seq_ids[i]) + ": the parent of node " +
                                 Str(node) + " is " + Str(parent) + ", must be in [-1, " + Str(node) + ")");
      }
      for (int64_t k = 0; k < length; ++k) {
        const int64_t node = old_size + k;
        if (tree[offset + k] != node - 1)
          return Unimplemented("begin_forward: the token tree of sequence " + Str(seq_ids[i]) + " branches (node " +
                               Str(node) + " has parent " + Str(tree[offset + k]) +
                               "): hetrt runs token trees only as chains (parent[n] = n - 1), not tree attention; "
                               "TVM v0.25's CPU tree-attention kernels are passed in swapped slots");
      }
      offset += static_cast<size_t>(length);
    }
  } else {
    for (size_t i = 0; i < batch_.size(); ++i) {
      if (!batch_[i]->committed)
        return FailedPrecondition("begin_forward: sequence " + Str(seq_ids[i]) + " has an uncommitted token tree (" +
                                  Str(batch_[i]->tree_size) +
                                  " nodes); call commit_accepted_token_tree_nodes before a forward without a tree");
    }
  }

  int64_t needed = 0;
  for (size_t i = 0; i < batch_.size(); ++i) {
    const Block& leaf = blocks_[batch_[i]->last_block];
    if (leaf.ref_count != 1)
      return FailedPrecondition("begin_forward: the last block of sequence " + Str(seq_ids[i]) +
                                " is shared (referred to " + Str(leaf.ref_count) + " times) and cannot grow");
    needed += std::max<int64_t>(0, CeilDiv(leaf.seq_length + append_lengths[i], page_size_) - leaf.num_pages);
  }
  if (needed > static_cast<int64_t>(free_pages_.size()))
    return CacheFull(needed, static_cast<int64_t>(free_pages_.size()))
        .WithContext("begin_forward of " + Str(total) + " new tokens");
  return OkStatus();
}

void PagedKvLayout::Reserve(Sequence& seq, int64_t n) {
  Block& leaf = blocks_[seq.last_block];
  const int64_t pages = CeilDiv(leaf.seq_length + n, page_size_);
  while (leaf.num_pages < pages) AppendPage(leaf, TakeFreePage());
  leaf.seq_length += static_cast<int32_t>(n);
}

void PagedKvLayout::BuildChunks(int d) {
  // GetChunkedBlockIds: neighbours on the same block may form one chunk
  // (coalesced), except at the deepest depth, which trailing blocks extend.
  const bool enable_coalesce = d != kMaxBlockDepth - 1;
  const std::vector<int32_t>& ids = block_ids_on_depth_[d];
  const std::vector<int64_t>& lengths = plan_.append_lengths;
  auto pages = [&](int32_t b) -> int64_t { return b == -1 ? 0 : blocks_[b].num_pages; };
  int64_t uncoalesced = 0, coalesced = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    uncoalesced += pages(ids[i]);
    if (i == 0 || ids[i] != ids[i - 1]) coalesced += pages(ids[i]);
  }
  const double ratio = coalesced > 0 ? static_cast<double>(uncoalesced) / static_cast<double>(coalesced) : 0.0;
  const bool use_decode_kernel = plan_.is_decode && ratio < 32;
  plan_.depths[d].use_decode_kernel = use_decode_kernel;
  std::vector<std::pair<int32_t, int64_t>>& chunks = chunks_[d];
  chunks.clear();
  const bool coalesce = enable_coalesce && !use_decode_kernel;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (coalesce && i > 0 && ids[i] == ids[i - 1]) {
      chunks.back().second += lengths[i];
    } else {
      chunks.emplace_back(ids[i], lengths[i]);
    }
  }
}

void PagedKvLayout::BuildDepthArrays(int d) {
  KvForwardDepth& depth = plan_.depths[d];
  depth.qo_indptr.assign(1, 0);
  depth.page_indptr.assign(1, 0);
  depth.page_indices.clear();
  depth.last_page_len.clear();
  depth.k_rope_pos_offset.clear();
  const std::vector<std::pair<int32_t, int64_t>>& chunks = chunks_[d];
  for (size_t c = 0; c < chunks.size(); ++c) {
    const auto [block_id, length] = chunks[c];
    depth.qo_indptr.push_back(depth.qo_indptr.back() + static_cast<int32_t>(length));
    if (block_id == -1) {  // the sequence has no block this deep
      depth.page_indptr.push_back(depth.page_indptr.back());
      depth.last_page_len.push_back(0);
      depth.k_rope_pos_offset.push_back(0);
      continue;
    }
    const Block& block = blocks_[block_id];
    AppendPageIds(block, &depth.page_indices);
    int64_t num_pages = block.num_pages;
    int64_t tokens = block.seq_length;
    if (d == kMaxBlockDepth - 1) {
      // The deepest depth is never coalesced (chunk c is sequence c): the
      // blocks below it follow as one.
      for (int32_t j = trailing_indptr_[c]; j < trailing_indptr_[c + 1]; ++j) {
        const Block& trailing = blocks_[trailing_blocks_[j]];
        AppendPageIds(trailing, &depth.page_indices);
        num_pages += trailing.num_pages;
        tokens += trailing.seq_length;
      }
    }
    depth.page_indptr.push_back(depth.page_indptr.back() + static_cast<int32_t>(num_pages));
    depth.last_page_len.push_back(tokens == 0 ? 0 : static_cast<int32_t>((tokens - 1) % page_size_ + 1));
    depth.k_rope_pos_offset.push_back(block.start_pos);
  }
}

Status PagedKvLayout::BeginForward(std::span<const int64_t> seq_ids, std::span<const int64_t> append_lengths,
                                   std::span<const int64_t> token_tree_parent_ptr) {
  HETRT_RETURN_IF_ERROR(CheckForward(seq_ids, append_lengths, token_tree_parent_ptr));
  const bool has_tree = !token_tree_parent_ptr.empty();
  const size_t batch = seq_ids.size();

  // 1-2. The batch; each sequence grows (its blocks grow at reservation).
  plan_.seq_ids.assign(seq_ids.begin(), seq_ids.end());
  plan_.append_lengths.assign(append_lengths.begin(), append_lengths.end());
  plan_.total_length = 0;
  plan_.is_decode = true;
  plan_.k_ragged_rope_pos_offset.clear();
  bool has_previous_tree = false;
  for (size_t i = 0; i < batch; ++i) {
    Sequence& seq = *batch_[i];
    const int64_t length = append_lengths[i];
    plan_.k_ragged_rope_pos_offset.push_back(static_cast<int32_t>(seq.length - (seq.committed ? 0 : seq.tree_size)));
    seq.length += length;
    plan_.total_length += length;
    if (length != 1) plan_.is_decode = false;
    if (!seq.committed) has_previous_tree = true;
  }

  // 3. Blocks per depth: the root, the next block, and the blocks below it.
  int num_depths = 0;
  for (auto& ids : block_ids_on_depth_) ids.clear();
  trailing_blocks_.clear();
  trailing_indptr_.assign(1, 0);
  for (size_t i = 0; i < batch; ++i) {
    ChainToRoot(batch_[i]->last_block, &trace_);  // leaf first
    const auto n = static_cast<int64_t>(trace_.size());
    num_depths = std::max(num_depths, static_cast<int>(std::min<int64_t>(n, kMaxBlockDepth)));
    block_ids_on_depth_[0].push_back(trace_[n - 1]);
    block_ids_on_depth_[1].push_back(n > 1 ? trace_[n - 2] : -1);
    for (int64_t j = n - 3; j >= 0; --j) trailing_blocks_.push_back(trace_[j]);
    trailing_indptr_.push_back(static_cast<int32_t>(trailing_blocks_.size()));
  }
  plan_.num_depths = num_depths;

  // 4-5. Chunks and kernels per depth; the last depth's kernel decides when K/V
  // is appended.
  for (int d = 0; d < num_depths; ++d) BuildChunks(d);
  plan_.append_before_attn = plan_.depths[num_depths - 1].use_decode_kernel || has_previous_tree;

  // 6. Token-tree state.
  for (size_t i = 0; i < batch; ++i) {
    Sequence& seq = *batch_[i];
    if (has_tree) {
      seq.tree_size = (seq.committed ? 0 : seq.tree_size) + append_lengths[i];
      seq.committed = false;
    } else {
      seq.tree_size = 0;
    }
  }

  // 7-8. Page tables: with the new tokens when they are appended first.
  if (plan_.append_before_attn) {
    for (size_t i = 0; i < batch; ++i) Reserve(*batch_[i], append_lengths[i]);
  }
  for (int d = 0; d < kMaxBlockDepth; ++d) {
    if (d < num_depths) {
      BuildDepthArrays(d);
    } else {
      KvForwardDepth& depth = plan_.depths[d];
      depth.qo_indptr.clear();
      depth.page_indptr.clear();
      depth.page_indices.clear();
      depth.last_page_len.clear();
      depth.k_rope_pos_offset.clear();
      depth.use_decode_kernel = false;
    }
  }
  if (!plan_.append_before_attn) {
    for (size_t i = 0; i < batch; ++i) Reserve(*batch_[i], append_lengths[i]);
  }

  // 9. Per-token maps.
  plan_.q_rope_position_map.clear();
  plan_.append_position_map.clear();
  plan_.cur_append_length_indptr.assign(1, 0);
  for (size_t i = 0; i < batch; ++i) {
    const Sequence& seq = *batch_[i];
    const int64_t length = append_lengths[i];
    const Block& leaf = blocks_[seq.last_block];
    // A tree's node n sits at depth n (chains only): its position counts from
    // where the tree started.
    const int64_t base = plan_.k_ragged_rope_pos_offset[i] + (seq.committed ? 0 : seq.tree_size - length);
    // The new tokens are the leaf block's last `length`: page by page from
    // the one that holds the first of them.
    const int64_t first = leaf.seq_length - length;
    int32_t page = PageAt(leaf, first / page_size_);
    int32_t slot = static_cast<int32_t>(first % page_size_);
    for (int64_t pos = 0; pos < length; ++pos) {
      plan_.q_rope_position_map.push_back(static_cast<int32_t>(base + pos));
      plan_.append_position_map.push_back(page * page_size_ + slot);
      if (++slot == page_size_) {
        slot = 0;
        page = next_page_[page];
      }
    }
    plan_.cur_append_length_indptr.push_back(plan_.cur_append_length_indptr.back() + static_cast<int32_t>(length));
  }
  has_forward_ = true;
  return OkStatus();
}

// ---------------------------------------------------------------- token trees

Status PagedKvLayout::CommitAcceptedTokenTreeNodes(std::span<const int64_t> seq_ids,
                                                   std::span<const int64_t> leaf_indices) {
  if (seq_ids.size() != leaf_indices.size())
    return InvalidArgument("commit_accepted_token_tree_nodes: " + Str(static_cast<int64_t>(seq_ids.size())) +
                           " sequence ids but " + Str(static_cast<int64_t>(leaf_indices.size())) + " leaf indices");
  if (seq_ids.empty()) return OkStatus();
  sorted_ids_.assign(seq_ids.begin(), seq_ids.end());
  std::sort(sorted_ids_.begin(), sorted_ids_.end());
  auto dup = std::adjacent_find(sorted_ids_.begin(), sorted_ids_.end());
  if (dup != sorted_ids_.end())
    return InvalidArgument("commit_accepted_token_tree_nodes lists sequence " + Str(*dup) + " twice");
  for (size_t i = 0; i < seq_ids.size(); ++i) {
    auto it = sequences_.find(seq_ids[i]);
    if (it == sequences_.end())
      return NotFound("commit_accepted_token_tree_nodes: sequence " + Str(seq_ids[i]) + " is not in the KV cache");
    const Sequence& seq = it->second;
    const int64_t leaf = leaf_indices[i];
    if (leaf != -1 && seq.committed)
      return FailedPrecondition("commit_accepted_token_tree_nodes: sequence " + Str(seq_ids[i]) +
                                " has no uncommitted token tree (its nodes are committed already)");
    const int64_t tree_size = seq.committed ? 0 : seq.tree_size;
    if (leaf < -1 || leaf >= tree_size)
      return OutOfRange("commit_accepted_token_tree_nodes: leaf index " + Str(leaf) + " of sequence " +
                        Str(seq_ids[i]) + " must be in [-1, " + Str(tree_size) + ")");
    const int64_t pop = tree_size - (leaf + 1);
    if (pop > seq.length || PlanPopN(seq, pop).remaining > 0)
      return FailedPrecondition("commit_accepted_token_tree_nodes: the " + Str(pop) + " rejected nodes of sequence " +
                                Str(seq_ids[i]) + " are no longer at the end of its own last block");
  }
  for (size_t i = 0; i < seq_ids.size(); ++i) {
    Sequence& seq = sequences_.at(seq_ids[i]);
    const int64_t tree_size = seq.committed ? 0 : seq.tree_size;
    // A chain's accepted nodes [0, leaf] already sit at consecutive positions:
    // no K/V moves, the rest is popped.
    if (const int64_t pop = tree_size - (leaf_indices[i] + 1); pop > 0) PopNUnchecked(seq_ids[i], pop, nullptr);
    seq.committed = true;
    seq.tree_size = 0;
  }
  has_forward_ = false;
  return OkStatus();
}

// ---------------------------------------------------------------- debugging

std::string PagedKvLayout::DebugString() const {
  std::string out = "page_size " + Str(page_size_) + ", " + Str(num_total_pages_) + " pages, free " +
                    FormatIds(free_pages_) + "; " + Str(static_cast<int64_t>(blocks_.size())) + " blocks, free " +
                    FormatIds(free_blocks_) + (has_forward_ ? "; forward open\n" : "\n");
  std::map<int64_t, const Sequence*> sorted;
  for (const auto& [id, seq] : sequences_) sorted.emplace(id, &seq);
  for (const auto& [id, seq] : sorted) {
    out += "seq " + Str(id) + ": length " + Str(seq->length) + ", leaf block " + Str(seq->last_block);
    if (!seq->committed) out += ", uncommitted chain of " + Str(seq->tree_size);
    out += "\n";
  }
  std::vector<bool> is_free(blocks_.size(), false);
  for (int32_t b : free_blocks_) is_free[b] = true;
  for (size_t b = 0; b < blocks_.size(); ++b) {
    if (is_free[b]) continue;
    const Block& block = blocks_[b];
    std::vector<int32_t> pages;
    AppendPageIds(block, &pages);
    out += "block " + Str(static_cast<int64_t>(b)) + ": parent " + Str(block.parent) + ", refs " +
           Str(block.ref_count) + ", start " + Str(block.start_pos) + ", length " + Str(block.seq_length) + ", pages " +
           FormatIds(pages) + "\n";
  }
  return out;
}

}  // namespace hetrt
