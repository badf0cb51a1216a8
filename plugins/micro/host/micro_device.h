// What the micro plugin's whole-model table does, in C++: opens a Model
// Library Format model on a transport chosen by options, reports its cost,
// writes and runs projects. micro_plugin.cc only adapts this to the C ABI.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model_plan.h"
#include "model_session.h"

namespace hetrt::micro {

using OptionMap = std::map<std::string, std::string>;

// The option keys create() takes, for error messages and docs.
extern const char* const kModelOptionKeys;

struct MicroReport {
  uint64_t arena_used = 0, arena_total = 0, metadata_budget = 0;
  uint64_t instructions = 0, device_ns = 0;
  std::string text;
};

class MicroModel {
 public:
  virtual ~MicroModel() = default;
  // Inputs and outputs (name, dtype, shape, bytes) and set_input / run / get_output.
  virtual ModelSession& session() = 0;
  virtual Result<MicroReport> Report() = 0;
};

// device "cpu": in this process (transport inproc). device "micro": transport
// pipe (default), qemu (default with a board), tcp:HOST:PORT or
// serial:PATH[,BAUD]. Options: see kModelOptionKeys.
Result<std::unique_ptr<MicroModel>> OpenMicroModel(const std::string& path, const std::string& device,
                                                   const OptionMap& options);

// Whether `path` looks like an MLF tarball (a tar or gzip header); "" when it
// does, else why not.
std::string WhyNotMlf(const std::string& path);

// `hetrt micro project`: options board, inputs (a param-dict file), arena_bytes.
Result<std::string> GenerateProject(const std::string& path, const std::string& dir, const OptionMap& options);
// `hetrt micro run-qemu`: builds standalone.elf if needed and runs it (options
// board, timeout_ms); the board's output, then the instruction counts.
struct ProjectRun {
  int exit_code = 0;
  std::string output;
};
Result<ProjectRun> RunProjectOnQemu(const std::string& dir, const OptionMap& options);

}  // namespace hetrt::micro
