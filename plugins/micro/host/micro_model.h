// Host side of hetrt's micro runtime: turns a Model Library Format tarball
// into C that runs on the C runtime (plugins/micro/crt), and builds it as an
// in-process library or a standalone project.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "hetrt/executor.h"
#include "hetrt/mlf.h"
#include "hetrt/params.h"

namespace hetrt::micro {

// C glue giving every model the same C API (hetrt_model_init/run/input/output),
// for graph models (graph JSON + params embedded) and AOT models (the
// generated tvmgen_<model>_run interface).
Result<std::string> GenerateModelGlue(const MlfPackage& mlf);

// Source files of the C runtime, and its include folders.
std::vector<std::string> RuntimeSources();
std::vector<std::string> RuntimeIncludeDirs();

// A model compiled with the C runtime into a shared library and loaded into
// this process; it runs in an arena of `arena_bytes` that the host allocates.
class InProcessModel final : public Executor {
 public:
  static Result<std::unique_ptr<InProcessModel>> Build(const MlfPackage& mlf, const LinkOptions& options,
                                                       size_t arena_bytes = 64u << 20);
  ~InProcessModel() override;

  int NumInputs() const override { return static_cast<int>(inputs_.size()); }
  int NumOutputs() const override { return static_cast<int>(outputs_.size()); }
  const std::string& InputName(int index) const override { return inputs_[static_cast<size_t>(index)].name; }
  std::string OutputName(int index) const override { return outputs_[static_cast<size_t>(index)].name; }
  std::vector<int> UnboundInputs() const override;
  Status SetInput(int index, const Tensor& value) override;
  using Executor::SetInput;
  Status Run() override;
  Result<Tensor> GetOutput(int index) const override;

  DLDataType InputDtype(int index) const { return inputs_[static_cast<size_t>(index)].dtype; }
  const std::vector<int64_t>& InputShape(int index) const { return inputs_[static_cast<size_t>(index)].shape; }

  // Peak use so far of the model's arena (tensors + kernel workspace), of the
  // executor's separate memory, and the runtime's per-pool report.
  size_t ArenaPeakBytes() const;
  size_t ExecutorPeakBytes() const;
  std::string ArenaReport() const;

 private:
  struct Api;
  struct Io {
    std::string name;
    DLDataType dtype;
    std::vector<int64_t> shape;
  };
  InProcessModel() = default;
  std::unique_ptr<Api> api_;
  void* handle_ = nullptr;
  std::string dir_;
  std::vector<uint8_t> arena_, executor_arena_;
  std::vector<Io> inputs_, outputs_;
};

// Host-driven mode: the model runs in a separate device program (the C runtime
// + a server) that this executor drives over a byte stream with the framed
// protocol of hetrt_crt_protocol.h. A pipe to a child process plays the role a
// UART plays on a board. Lost or corrupted frames are retried after a timeout;
// a device that dies is restarted on the next call, with the inputs replayed.
struct RemoteOptions {
  int timeout_ms = 2000;
  int retries = 3;
  // Fault injection, for tests: garbage bytes before every Nth frame sent, and
  // the first transmission of every Nth frame dropped.
  int garbage_every = 0;
  int drop_every = 0;
};

class MicroRemoteModel final : public Executor {
 public:
  static Result<std::unique_ptr<MicroRemoteModel>> Build(const MlfPackage& mlf, const RemoteOptions& options = {});
  ~MicroRemoteModel() override;

  int NumInputs() const override { return static_cast<int>(inputs_.size()); }
  int NumOutputs() const override { return static_cast<int>(outputs_.size()); }
  const std::string& InputName(int index) const override { return inputs_[static_cast<size_t>(index)].name; }
  std::string OutputName(int index) const override { return outputs_[static_cast<size_t>(index)].name; }
  std::vector<int> UnboundInputs() const override;
  Status SetInput(int index, const Tensor& value) override;
  using Executor::SetInput;
  Status Run() override;
  Result<Tensor> GetOutput(int index) const override;
  Result<std::string> ArenaReport() const;

  // For tests: kills the device program as a crash or unplugged board would.
  void KillDevice();
  int restarts() const { return restarts_; }
  int retransmissions() const { return retransmissions_; }

 private:
  struct Tensor_ {
    std::string name;
    size_t bytes = 0;
    DLDataType dtype{kDLFloat, 32, 1};
    std::vector<int64_t> shape;
    std::vector<uint8_t> last_value;  // replayed into a restarted device
  };
  MicroRemoteModel() = default;
  Status Start() const;
  void Stop() const;
  // One request/reply exchange, with retries, restart and error frames handled.
  Result<std::vector<uint8_t>> Call(uint8_t type, const std::vector<uint8_t>& payload) const;
  Result<std::vector<uint8_t>> Exchange(uint8_t type, const std::vector<uint8_t>& payload) const;

  std::string dir_, program_;
  RemoteOptions options_;
  mutable int pid_ = -1, to_device_ = -1, from_device_ = -1;
  mutable uint16_t seq_ = 0;
  mutable int frames_sent_ = 0, restarts_ = 0, retransmissions_ = 0;
  mutable std::vector<uint8_t> rx_;
  mutable std::vector<Tensor_> inputs_, outputs_;
};

// Writes a self-contained C project (runtime, model code, glue, main.c with the
// inputs embedded, Makefile) that builds with `make` and prints the outputs and
// the arena report. The arena is sized from a measured run (peak + margin).
struct ProjectOptions {
  std::vector<NamedTensor> inputs;  // embedded; zeros for inputs not given
  size_t arena_bytes = 0;           // 0: measure with an in-process run
};
Status WriteStandaloneProject(const MlfPackage& mlf, const std::string& dir, const ProjectOptions& options);

// Builds a project's Cortex-M4F target (needs arm-none-eabi-gcc) and reports its sections.
struct CortexMSizes {
  uint64_t text = 0, data = 0, bss = 0;  // flash = text + data; RAM = data + bss
};
Result<CortexMSizes> BuildCortexM(const std::string& dir);

}  // namespace hetrt::micro
