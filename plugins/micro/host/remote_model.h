// Host-driven mode: the model runs on a device (firmware on a board, or a
// device program) that this executor drives over a Transport with the framed
// protocol. Lost or damaged frames are retried; a device that dies or
// restarts makes the call that noticed it fail with a clear error, and the
// next call starts a new session (restarting the device program or emulator
// where the transport can) and replays the inputs.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "frame_client.h"
#include "hetrt/exec/executor.h"
#include "model_plan.h"

namespace hetrt::micro {

class RemoteModel final : public Executor {
 public:
  // Opens the transport and checks the device's HELLO against `plan`.
  static Result<std::unique_ptr<RemoteModel>> Connect(std::unique_ptr<Transport> transport, const ModelPlan& plan,
                                                      const LinkOptions& options);

  int NumInputs() const override { return static_cast<int>(inputs_.size()); }
  int NumOutputs() const override { return static_cast<int>(outputs_.size()); }
  const std::string& InputName(int index) const override { return inputs_[static_cast<size_t>(index)].spec.name; }
  std::string OutputName(int index) const override { return outputs_[static_cast<size_t>(index)].name; }
  std::vector<int> UnboundInputs() const override;
  Status SetInput(int index, const Tensor& value) override;
  using Executor::SetInput;
  Status Run() override;
  Result<Tensor> GetOutput(int index) const override;
  Result<std::string> ArenaReport() const;

  const std::vector<TensorSpec>& output_specs() const { return outputs_; }
  TensorSpec input_spec(int index) const { return inputs_[static_cast<size_t>(index)].spec; }
  // The device's own clock: ticks of the last run and their rate (0: none).
  uint64_t last_run_ticks() const { return last_run_ticks_; }
  uint32_t tick_hz() const { return tick_hz_; }
  const std::string& board() const { return board_; }
  std::string Describe() const { return client_->transport().Describe(); }

  // For tests: kills or resets the device as a crash or a reset button would.
  Status ResetDevice() { return client_->transport().ResetDevice(); }
  int restarts() const { return restarts_; }
  int retransmissions() const { return client_->retransmissions(); }

 private:
  struct Input {
    TensorSpec spec;
    std::vector<uint8_t> last_value;  // replayed into a restarted device
  };
  RemoteModel() = default;
  // HELLO with a new session; checks the tensors; replays the inputs.
  Status StartSession() const;
  // One request/reply, starting a session first when there is none.
  Result<std::vector<uint8_t>> Call(uint8_t type, const std::vector<uint8_t>& payload, int timeout_ms,
                                    size_t reply_bytes = 0) const;

  std::unique_ptr<FrameClient> client_;
  mutable std::vector<Input> inputs_;
  std::vector<TensorSpec> outputs_;
  mutable bool in_session_ = false;
  mutable int restarts_ = -1;  // the first session is not a restart
  mutable uint32_t session_counter_ = 0;
  mutable uint64_t last_run_ticks_ = 0;
  mutable uint32_t tick_hz_ = 0;
  mutable std::string board_;
};

}  // namespace hetrt::micro
