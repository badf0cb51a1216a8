#include "remote_model.h"

#include <unistd.h>

#include <cstring>

#include "hetrt_crt_protocol.h"
#include "wire_format.h"

namespace hetrt::micro {
Result<std::unique_ptr<RemoteModel>> RemoteModel::Connect(std::unique_ptr<Transport> transport, const ModelPlan& plan,
                                                          const LinkOptions& options) {
  std::unique_ptr<RemoteModel> m(new RemoteModel());
  m->client_ = std::make_unique<FrameClient>(std::move(transport), options);
  m->input_specs_ = plan.inputs;
  m->last_inputs_.resize(plan.inputs.size());
  m->outputs_ = plan.outputs;
  m->session_counter_ = static_cast<uint32_t>(getpid()) << 8;
  HETRT_RETURN_IF_ERROR(m->StartSession());
  return m;
}

Status RemoteModel::StartSession() const {
  Transport& transport = client_->transport();
  if (!transport.IsOpen()) HETRT_RETURN_IF_ERROR(transport.Open());
  client_->clear_device_lost();
  client_->set_session_active(false);
  std::vector<uint8_t> request;
  Put32(request, ++session_counter_ == 0 ? ++session_counter_ : session_counter_);
  // The first reply may wait for a device that is still booting.
  HETRT_ASSIGN_OR_RETURN(auto hello, client_->Exchange(HETRT_MSG_HELLO, request, client_->options().timeout_ms));
  if (hello.size() < 8) return DataLoss(transport.Describe() + ": short HELLO reply");
  const uint32_t ni = Get32(hello.data()), no = Get32(hello.data() + 4);
  if (ni != input_specs_.size() || no != outputs_.size())
    return DataLoss(transport.Describe() + ": the device's model has " + std::to_string(ni) + " inputs and " +
                    std::to_string(no) + " outputs; this model has " + std::to_string(input_specs_.size()) + " and " +
                    std::to_string(outputs_.size()) + " (is it the same model?)");
  size_t at = 8;
  for (uint32_t k = 0; k < ni + no; ++k) {
    if (at + 6 > hello.size()) return DataLoss(transport.Describe() + ": truncated HELLO");
    const uint32_t bytes = Get32(hello.data() + at);
    const size_t len = hello[at + 4] | hello[at + 5] << 8;
    if (at + 6 + len > hello.size()) return DataLoss(transport.Describe() + ": truncated HELLO");
    const std::string name(hello.begin() + static_cast<long>(at) + 6, hello.begin() + static_cast<long>(at + 6 + len));
    at += 6 + len;
    const TensorSpec& expected = k < ni ? input_specs_[k] : outputs_[k - ni];
    if (bytes != expected.bytes)
      return DataLoss(transport.Describe() + ": the device's " + (k < ni ? "input" : "output") + " '" + name +
                      "' has " + std::to_string(bytes) + " bytes; the model's '" + expected.name + "' has " +
                      std::to_string(expected.bytes));
  }
  if (at + 6 <= hello.size()) {  // the board and its clock (older devices stop before)
    tick_hz_ = Get32(hello.data() + at);
    const size_t len = hello[at + 4] | hello[at + 5] << 8;
    if (at + 6 + len <= hello.size())
      board_.assign(hello.begin() + static_cast<long>(at) + 6, hello.begin() + static_cast<long>(at + 6 + len));
  }
  client_->set_session_active(true);
  in_session_ = true;
  ++restarts_;
  for (size_t i = 0; i < last_inputs_.size(); ++i) {
    if (last_inputs_[i].empty()) continue;
    std::vector<uint8_t> p;
    Put32(p, static_cast<uint32_t>(i));
    p.insert(p.end(), last_inputs_[i].begin(), last_inputs_[i].end());
    HETRT_RETURN_IF_ERROR(client_->Exchange(HETRT_MSG_SET_INPUT, p, client_->options().timeout_ms).status());
  }
  return OkStatus();
}

Result<std::vector<uint8_t>> RemoteModel::Call(uint8_t type, const std::vector<uint8_t>& payload, int timeout_ms,
                                               size_t reply_bytes) const {
  if (!in_session_) HETRT_RETURN_IF_ERROR(StartSession());
  auto reply = client_->Exchange(type, payload, timeout_ms, reply_bytes);
  if (!reply.ok() && client_->device_lost()) {
    in_session_ = false;
    static const char* const kNames[] = {"", "HELLO", "SET_INPUT", "RUN", "GET_OUTPUT", "ARENA"};
    return Unavailable(
        "micro device lost during " + std::string(type <= 5 ? kNames[type] : "a request") + ": " +
        reply.status().message() +
        "; the next call starts a new session (restarting the device where it is gone) and replays the inputs");
  }
  return reply;
}

Status RemoteModel::SetInput(int index, std::span<const uint8_t> bytes) {
  HETRT_RETURN_IF_ERROR(CheckIo(input_specs_, index, bytes.size(), "set_input"));
  auto& last = last_inputs_[static_cast<size_t>(index)];
  last.assign(bytes.begin(), bytes.end());
  std::vector<uint8_t> p;
  Put32(p, static_cast<uint32_t>(index));
  p.insert(p.end(), last.begin(), last.end());
  return Call(HETRT_MSG_SET_INPUT, p, client_->options().timeout_ms).status();
}

Status RemoteModel::Run() {
  HETRT_ASSIGN_OR_RETURN(auto reply, Call(HETRT_MSG_RUN, {}, client_->options().run_timeout_ms));
  last_run_ticks_ = reply.size() >= 8 ? uint64_t{Get32(reply.data())} | uint64_t{Get32(reply.data() + 4)} << 32 : 0;
  return OkStatus();
}

Status RemoteModel::GetOutput(int index, std::span<uint8_t> out) const {
  HETRT_RETURN_IF_ERROR(CheckIo(outputs_, index, out.size(), "get_output"));
  std::vector<uint8_t> p;
  Put32(p, static_cast<uint32_t>(index));
  HETRT_ASSIGN_OR_RETURN(auto bytes, Call(HETRT_MSG_GET_OUTPUT, p, client_->options().timeout_ms, out.size()));
  if (bytes.size() != out.size())
    return DataLoss("micro device: output " + std::to_string(index) + " has " + std::to_string(bytes.size()) +
                    " bytes, expected " + std::to_string(out.size()));
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return OkStatus();
}

Result<std::string> RemoteModel::ArenaReport() const {
  HETRT_ASSIGN_OR_RETURN(auto text, Call(HETRT_MSG_ARENA, {}, client_->options().timeout_ms));
  return std::string(text.begin(), text.end());
}

}  // namespace hetrt::micro
