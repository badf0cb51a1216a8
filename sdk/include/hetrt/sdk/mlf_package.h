// Model Library Format (MLF): TVM's tarball of generated C code, executor
// configuration, params and metadata, read with libarchive and validated entry
// by entry. Needs neither the core nor the toolchain (a static library of the
// SDK, hetrt_sdk_formats): plugins that take MLF models read them with it, and
// the toolchain's hetrt/mlf.h (writer, deploy-library export) builds on it.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "hetrt/base/status.h"

struct archive;

namespace hetrt {

struct MlfFunctionMemory {
  std::string name;  // "main" or an operator function
  int32_t device = 1;
  uint64_t workspace_bytes = 0;
  uint64_t constants_bytes = 0;  // main only
  uint64_t io_bytes = 0;         // main only
};

struct MlfTensorInfo {
  std::string name;
  std::string dtype;
  uint64_t bytes = 0;
  // From main's signature in src/<model>.relay when the tarball has it (and it
  // agrees with `bytes`); empty otherwise, and users see a flat [bytes / size].
  std::vector<int64_t> shape = {};
};

struct MlfMetadata {
  int version = 0;  // 5 or 7
  std::string model_name;
  std::vector<std::string> executors;  // "graph", "aot"
  std::vector<std::string> targets;
  std::string export_datetime;
  std::vector<MlfFunctionMemory> memory;
  // main's inputs and outputs with their sizes (version 7; AOT glue needs them).
  std::vector<MlfTensorInfo> inputs, outputs;
};

struct MlfLimits {
  uint64_t max_entry_bytes = 512ull << 20;
  uint64_t max_total_bytes = 2ull << 30;
  uint64_t max_entries = 100000;
};

class MlfPackage {
 public:
  // Refuses absolute paths, "..", links and other non-regular entries, and
  // entries or totals over the limits. runtime/ and templates/ (TVM's own C
  // runtime, carried by AOT tarballs) are skipped: hetrt has its own.
  static Result<MlfPackage> Read(const std::string& path, const MlfLimits& limits = {});
  // The same from bytes in memory; `source` names them in errors.
  static Result<MlfPackage> ReadBytes(std::span<const uint8_t> bytes, const std::string& source,
                                      const MlfLimits& limits = {});

  const MlfMetadata& metadata() const { return metadata_; }
  const std::map<std::string, std::vector<uint8_t>>& files() const { return files_; }
  const std::vector<uint8_t>* Find(const std::string& path) const;
  // codegen/host/src/*.c and codegen/host/lib/*.o, sorted.
  std::vector<std::string> HostCode() const;
  // The graph JSON of a graph model (executor-config/graph/<model>.graph or graph.json).
  Result<std::string> GraphJson() const;
  // parameters/<model>.params, if present (empty dicts are normal with link-params).
  const std::vector<uint8_t>* Params() const;
  bool HasExecutor(const std::string& name) const;

  // Writes the files under `dir` (which must exist) for compilation.
  Status ExtractTo(const std::string& dir) const;

 private:
  static Result<MlfPackage> ReadArchive(struct archive* a, const std::string& source, const MlfLimits& limits);

  std::string source_;
  MlfMetadata metadata_;
  std::map<std::string, std::vector<uint8_t>> files_;
};

}  // namespace hetrt
