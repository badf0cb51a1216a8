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
#include "model_plan.h"

namespace hetrt::micro {

class RemoteModel final : public ModelSession {
 public:
  // Opens the transport and checks the device's HELLO against `plan`.
  static Result<std::unique_ptr<RemoteModel>> Connect(std::unique_ptr<Transport> transport, const ModelPlan& plan,
                                                      const LinkOptions& options);

  const std::vector<TensorSpec>& inputs() const override { return input_specs_; }
  const std::vector<TensorSpec>& outputs() const override { return outputs_; }
  Status SetInput(int index, std::span<const uint8_t> bytes) override;
  Status Run() override;
  Status GetOutput(int index, std::span<uint8_t> out) const override;
  using ModelSession::GetOutput;
  Result<std::string> ArenaReport() const;

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
  RemoteModel() = default;
  // HELLO with a new session; checks the tensors; replays the inputs.
  Status StartSession() const;
  // One request/reply, starting a session first when there is none.
  Result<std::vector<uint8_t>> Call(uint8_t type, const std::vector<uint8_t>& payload, int timeout_ms,
                                    size_t reply_bytes = 0) const;

  std::unique_ptr<FrameClient> client_;
  std::vector<TensorSpec> input_specs_, outputs_;
  std::vector<std::vector<uint8_t>> last_inputs_;  // replayed into a restarted device
  mutable bool in_session_ = false;
  mutable int restarts_ = -1;  // the first session is not a restart
  mutable uint32_t session_counter_ = 0;
  mutable uint64_t last_run_ticks_ = 0;
  mutable uint32_t tick_hz_ = 0;
  mutable std::string board_;
};

}  // namespace hetrt::micro
