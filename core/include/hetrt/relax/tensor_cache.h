// TVM's tensor cache, the weight format of TVM LLM libraries and MLC-LLM
// (docs: llm-runtime.md §3): a directory with tensor-cache.json and shard
// files ("params_shard_<k>.bin") that hold the tensors' bytes back to back.
//
//   { "metadata": ...,                                   ignored
//     "records": [ { "dataPath": "params_shard_0.bin",   relative to the directory
//                    "format": "raw-shard",              the only shard format
//                    "nbytes": <the shard file's size>,
//                    "md5sum": ...,                      ignored
//                    "records": [ { "name", "shape", "dtype",
//                                   "format": "raw" | "f32-to-bf16",
//                                   "nbytes", "byteOffset" } ] } ] }
//
// TensorCacheIndex::Open reads the JSON, maps every shard read-only and checks
// everything before anything is loaded: a cache that opens decodes without
// bounds checks. Errors name the file (tensor-cache.json or the shard) and the
// record (JSON position and name) and say what was expected and what was found:
//   NOT_FOUND          tensor-cache.json or a shard is missing
//   DATA_LOSS          malformed JSON, a missing or mistyped field, sizes that
//                      disagree, a record outside its shard, duplicate names
//   INVALID_ARGUMENT   a dataPath that leaves the directory (absolute, "..");
//                      a dtype hetrt does not parse
//   UNIMPLEMENTED      a shard or record format other than the ones above
//   RESOURCE_EXHAUSTED tensor-cache.json over 64 MiB
// Shards are found by a lexical rule: dataPath must be relative and have no
// ".." component. Symbolic links inside the directory are followed (the
// Hugging Face cache links every file to a blob elsewhere).
//
// Decoding a record (LoadRecord): "raw" bytes are the tensor's; a float32
// record in "f32-to-bf16" holds bfloat16 values, each widened to the float32
// with bits u16 << 16. A record of another dtype labelled "f32-to-bf16" is
// stored verbatim (TVM's writer labels every record with the chosen format).
//
// The global builtins vm.builtin.tensor_cache.* and param_array_from_cache*
// work on TensorCacheRegistry::Global() through the functions at the end.
#pragma once

#include <dlpack/dlpack.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "hetrt/base/status.h"
#include "hetrt/base/tensor.h"

namespace hetrt {

class Device;

// One tensor of the cache, as tensor-cache.json describes it (checked).
struct TensorCacheRecord {
  enum class Format { kRaw, kF32ToBf16 };

  std::string name;
  std::vector<int64_t> shape;
  DLDataType dtype{};
  Format format = Format::kRaw;
  uint64_t nbytes = 0;       // bytes stored in the shard
  uint64_t byte_offset = 0;  // where they start in the shard
  size_t shard = 0;          // index into the shard list, in tensor-cache.json order

  // Whether the stored bytes are bfloat16 widened to float32 on load.
  bool widens_bf16() const;
  // Bytes of the decoded tensor: elements x dtype bytes (nbytes, or twice it
  // for a widened record).
  uint64_t decoded_nbytes() const;
};

// Thread contract: immutable once opened, so thread-safe; copies are cheap and
// share the records and the shard mappings, which live until the last copy
// (and every span from Bytes()) is gone.
class TensorCacheIndex {
 public:
  // Reads <dir>/tensor-cache.json (or, when only that exists, the older
  // ndarray-cache.json) and maps its shards; see the top of the file.
  static Result<TensorCacheIndex> Open(const std::string& dir);
  // The index file Open(dir) reads (<dir>/tensor-cache.json, or the older
  // ndarray-cache.json when only that exists); empty when neither is a file.
  static std::string IndexFileIn(const std::string& dir);

  // Every record, in tensor-cache.json order (shard by shard).
  const std::vector<TensorCacheRecord>& records() const;
  // The record named `name`; NULL when there is none.
  const TensorCacheRecord* Find(std::string_view name) const;
  // The record's stored bytes inside its shard's mapping; empty for a record
  // this index does not hold (a shard index or range beyond its shards).
  std::span<const uint8_t> Bytes(const TensorCacheRecord& record) const;
  const std::string& dir() const;
  const std::string& index_path() const;  // the JSON file read
  // Sum of the records' decoded bytes (what LoadAll allocates).
  uint64_t total_bytes() const;
  // The shard files' paths (<dir>/<dataPath>), in tensor-cache.json order.
  const std::vector<std::string>& shard_paths() const;

  struct State;  // the implementation's

 private:
  explicit TensorCacheIndex(std::shared_ptr<const State> state) : state_(std::move(state)) {}
  std::shared_ptr<const State> state_;
};

// Decodes `record` into host memory at `host_destination`, which must hold
// record.decoded_nbytes() bytes. INVALID_ARGUMENT when the record is not one
// `index` holds.
Status DecodeRecordInto(const TensorCacheIndex& index, const TensorCacheRecord& record, void* host_destination);

// A new tensor of the record's shape and dtype from `device.allocator()`. Where
// the host addresses that memory (a CPU device, host-visible memory) the record
// is decoded straight into it; otherwise its bytes go from the shard mapping to
// the device in one blocking copy (a widened record is decoded into host
// staging memory first).
Result<Tensor> LoadRecord(const TensorCacheIndex& index, const TensorCacheRecord& record, const Device& device);

// Every record, in records() order, onto `device` (one staging buffer for all
// widened records). `progress`, when given, is called after each record with
// the decoded bytes done so far and total_bytes().
Result<std::vector<Tensor>> LoadAll(
    const TensorCacheIndex& index, const Device& device,
    const std::function<void(size_t done_bytes, size_t total_bytes)>& progress = nullptr);

// The process-wide name -> Tensor map behind vm.builtin.tensor_cache.{load,
// get, update, remove, clear}. Tensors are shared (Tensor copies), so removing
// or clearing frees nothing an array or a VM still holds.
//
// Thread contract: thread-safe; every call may come from any thread.
class TensorCacheRegistry {
 public:
  TensorCacheRegistry() = default;
  TensorCacheRegistry(const TensorCacheRegistry&) = delete;
  TensorCacheRegistry& operator=(const TensorCacheRegistry&) = delete;

  static TensorCacheRegistry& Global();

  // Adds `tensor` as `name`; an existing name is replaced when `override`,
  // else INVALID_ARGUMENT naming it.
  Status Insert(std::string name, Tensor tensor, bool override = false);
  std::optional<Tensor> Get(std::string_view name) const;
  // Whether there was such a name.
  bool Remove(std::string_view name);
  void Clear();
  size_t size() const;

 private:
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Tensor, NameHash, std::equal_to<>> tensors_;
};

// The tensors named `names`, in that order (param_array_from_cache_by_name);
// NOT_FOUND naming the first missing one.
Result<std::vector<Tensor>> ParamArrayByName(const TensorCacheRegistry& registry, std::span<const std::string> names);
// prefix_0 ... prefix_{n-1} (param_array_from_cache); n == -1: up to the first
// missing name. With n >= 0 a missing name is NOT_FOUND; n < -1 is INVALID_ARGUMENT.
Result<std::vector<Tensor>> ParamArrayByPrefix(const TensorCacheRegistry& registry, const std::string& prefix,
                                               int64_t n);

}  // namespace hetrt
