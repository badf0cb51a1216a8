// TVM's SaveToBinary layout of device modules (cuda, opencl, vulkan, ...):
// little-endian PODs and u64-length strings, and the function map they all
// start with: map<str key, FunctionInfo{str name, arg types, launch tags}>.
// Every read is bounded by what is left, so a corrupt count never over-reads
// or over-allocates.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hetrt/plugin_abi.h"
#include "hetrt/sdk/byte_stream.h"

namespace hetrt::sdk {

// The one bounded reader (ByteReader, hetrt/sdk/byte_stream.h, whose reads are
// header-only) with bool results, as the plugins' blob loaders use it: they
// say in their own words what was truncated.
class BlobReader {
 public:
  explicit BlobReader(std::span<const uint8_t> data) : reader_(data, "blob") {}
  uint64_t offset() const { return reader_.offset(); }
  uint64_t left() const { return reader_.remaining(); }
  template <class T>
  bool Pod(T* v) {
    return reader_.ReadPod(v, "value").ok();
  }
  bool Str(std::string* s) { return reader_.ReadString(s, "string").ok(); }
  // A count of elements of at least `min_bytes` each that can still fit.
  bool Count(uint64_t* n, uint64_t min_bytes) { return reader_.ReadCount(n, min_bytes, "count").ok(); }
  // `n` 32-bit words (SPIR-V).
  bool Words(uint64_t n, std::vector<uint32_t>* out) {
    std::span<const uint8_t> bytes;
    if (n > left() / 4 || !reader_.ReadBytes(n * 4, &bytes, "words").ok()) return false;
    out->resize(n);
    std::memcpy(out->data(), bytes.data(), bytes.size());
    return true;
  }

 private:
  ByteReader reader_;
};

// The one byte writer (hetrt/sdk/byte_stream.h, header-only there) under the
// names module savers use; Take() hands the bytes over.
class BlobWriter : public ByteWriter {
 public:
  template <class T>
  void Pod(T v) {
    WritePod(v);
  }
  void Str(std::string_view s) { WriteString(s); }
  void Words(std::span<const uint32_t> words) {
    WriteBytes({reinterpret_cast<const uint8_t*>(words.data()), words.size_bytes()});
  }
};

// TVM's FunctionInfo.
struct FunctionInfo {
  std::string name;  // TVM writes it empty; kept for saving
  std::vector<DLDataType> arg_types;
  std::vector<std::string> launch_param_tags;
};
using FunctionMap = std::vector<std::pair<std::string, FunctionInfo>>;  // blob order, for byte-exact saving

// Reads the function map; "" or why the bytes are not one (keys non-empty and
// unique).
inline std::string ReadFunctionMap(BlobReader& r, FunctionMap* out) {
  uint64_t count = 0;
  // A function is at least its key, name and two counts: 32 bytes.
  if (!r.Count(&count, 32)) return "function count does not fit the blob";
  FunctionMap functions;
  for (uint64_t i = 0; i < count; ++i) {
    std::string key;
    FunctionInfo info;
    if (!r.Str(&key) || key.empty()) return "function " + std::to_string(i) + ": missing or empty name";
    if (!r.Str(&info.name)) return "function '" + key + "': truncated FunctionInfo.name";
    uint64_t n = 0;
    if (!r.Count(&n, 4)) return "function '" + key + "': argument type count does not fit the blob";
    for (uint64_t t = 0; t < n; ++t) {
      DLDataType type{};
      r.Pod(&type.code), r.Pod(&type.bits), r.Pod(&type.lanes);
      info.arg_types.push_back(type);
    }
    if (!r.Count(&n, 8)) return "function '" + key + "': launch tag count does not fit the blob";
    for (uint64_t t = 0; t < n; ++t) {
      std::string tag;
      if (!r.Str(&tag)) return "function '" + key + "': truncated launch tag";
      info.launch_param_tags.push_back(std::move(tag));
    }
    for (const auto& [existing, unused] : functions)
      if (existing == key) return "function '" + key + "' listed twice";
    functions.emplace_back(std::move(key), std::move(info));
  }
  *out = std::move(functions);
  return "";
}

inline void WriteFunctionMap(BlobWriter& w, const FunctionMap& functions) {
  w.Pod<uint64_t>(functions.size());
  for (const auto& [key, info] : functions) {
    w.Str(key);
    w.Str(info.name);
    w.Pod<uint64_t>(info.arg_types.size());
    for (const DLDataType& t : info.arg_types) w.Pod(t.code), w.Pod(t.bits), w.Pod(t.lanes);
    w.Pod<uint64_t>(info.launch_param_tags.size());
    for (const std::string& tag : info.launch_param_tags) w.Str(tag);
  }
}

// What a function's launch tags mean: the work-size slot of each tag
// (blockIdx.d -> d, threadIdx.d -> 3 + d) and whether one more argument, the
// dynamic shared memory size, follows them (last tag tir.use_dyn_shared_memory).
struct LaunchTags {
  std::vector<uint8_t> slots;
  bool dynamic_shared_memory = false;
  int num_launch_args() const { return static_cast<int>(slots.size()) + (dynamic_shared_memory ? 1 : 0); }
  // 1 + the highest axis the tags use (OpenCL's work_dim).
  int work_dim() const {
    int dim = 1;
    for (uint8_t s : slots) dim = std::max(dim, 1 + s % 3);
    return dim;
  }
};

// "" or why the tags are not TVM's.
inline std::string ParseLaunchTags(const std::vector<std::string>& tags, LaunchTags* out) {
  LaunchTags parsed;
  for (size_t i = 0; i < tags.size(); ++i) {
    const std::string& tag = tags[i];
    if (tag == "tir.use_dyn_shared_memory") {
      if (i + 1 != tags.size()) return "launch tag 'tir.use_dyn_shared_memory' must be the last one";
      parsed.dynamic_shared_memory = true;
      continue;
    }
    const bool block = tag.size() == 10 && tag.compare(0, 9, "blockIdx.") == 0;
    const bool thread = tag.size() == 11 && tag.compare(0, 10, "threadIdx.") == 0;
    const char axis = tag.empty() ? '\0' : tag.back();
    if ((!block && !thread) || axis < 'x' || axis > 'z')
      return "unknown launch tag '" + tag +
             "' (expected blockIdx.{x,y,z}, threadIdx.{x,y,z} or tir.use_dyn_shared_memory)";
    parsed.slots.push_back(static_cast<uint8_t>((thread ? 3 : 0) + (axis - 'x')));
  }
  *out = std::move(parsed);
  return "";
}

}  // namespace hetrt::sdk
