// A model living in a whole-model plugin (ABI 2.1's whole-model table: a
// device the plugin drives itself, such as a microcontroller), called through
// that table. Owns the plugin's model handle and keeps the plugin alive.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "hetrt/device/plugin.h"

namespace hetrt {

using PluginOptions = std::vector<std::pair<std::string, std::string>>;

struct WholeModelIo {
  std::string name;
  DLDataType dtype{kDLFloat, 32, 1};
  std::vector<int64_t> shape = {};
  uint64_t nbytes = 0;
};

// What the model costs on its device (zeros where the plugin cannot tell).
struct WholeModelReport {
  uint64_t arena_bytes_used = 0, arena_bytes_total = 0, metadata_bytes = 0;
  uint64_t last_run_instructions = 0, last_run_device_ns = 0;
  std::string text;
};

// Thread contract: thread-compatible: one thread at a time sets inputs, runs and reads outputs.
class WholeModel {
 public:
  // Whether `plugin` runs the model file at `path` on `device`; when not,
  // `reason` says why (the plugin's words).
  static Result<bool> Accepts(Plugin& plugin, const std::string& path, const std::string& device, std::string* reason);
  // Opens the model and reads its inputs and outputs.
  static Result<WholeModel> Create(Plugin& plugin, const std::string& path, const std::string& device,
                                   const PluginOptions& options);
  WholeModel(WholeModel&& other) noexcept;
  WholeModel& operator=(WholeModel&& other) noexcept;
  WholeModel(const WholeModel&) = delete;
  WholeModel& operator=(const WholeModel&) = delete;
  ~WholeModel();

  Plugin& plugin() const { return *plugin_; }
  const std::vector<WholeModelIo>& inputs() const { return inputs_; }
  const std::vector<WholeModelIo>& outputs() const { return outputs_; }
  // Host bytes in and out; sizes are checked by the plugin.
  Status SetInput(int32_t index, const void* data, uint64_t nbytes) const;
  Status Run() const;
  Status GetOutput(int32_t index, void* data, uint64_t nbytes) const;
  Result<WholeModelReport> Report() const;

  // The optional project hooks: a self-contained project for the device, and
  // running one (UNIMPLEMENTED when the plugin has none).
  static Result<std::string> GenerateProject(Plugin& plugin, const std::string& path, const std::string& device,
                                             const std::string& output_dir, const PluginOptions& options);
  struct ProjectRun {
    int exit_code = 0;
    std::string output;
  };
  static Result<ProjectRun> RunProject(Plugin& plugin, const std::string& project_dir, const PluginOptions& options);

 private:
  WholeModel(std::shared_ptr<Plugin> plugin, hetrt_whole_model_t* model) : plugin_(std::move(plugin)), model_(model) {}
  Status ReadIo();
  void Reset();
  std::shared_ptr<Plugin> plugin_;
  hetrt_whole_model_t* model_ = nullptr;
  std::vector<WholeModelIo> inputs_, outputs_;
};

}  // namespace hetrt
