#include "model_session.h"

namespace hetrt::micro {

int ModelSession::InputIndex(std::string_view name) const {
  for (int i = 0; i < NumInputs(); ++i)
    if (inputs()[static_cast<size_t>(i)].name == name) return i;
  return -1;
}

Result<std::vector<uint8_t>> ModelSession::GetOutput(int index) const {
  if (index < 0 || index >= NumOutputs()) return OutOfRange("get_output: no output " + std::to_string(index));
  std::vector<uint8_t> bytes(outputs()[static_cast<size_t>(index)].bytes);
  HETRT_RETURN_IF_ERROR(GetOutput(index, bytes));
  return bytes;
}

Status ModelSession::CheckIo(const std::vector<TensorSpec>& list, int index, size_t bytes, const char* call) const {
  if (index < 0 || static_cast<size_t>(index) >= list.size())
    return OutOfRange(std::string(call) + ": no tensor " + std::to_string(index) + " (the model has " +
                      std::to_string(list.size()) + ")");
  const TensorSpec& spec = list[static_cast<size_t>(index)];
  if (bytes != spec.bytes)
    return InvalidArgument(std::string(call) + " '" + spec.name + "': " + std::to_string(bytes) +
                           " bytes, the model's tensor has " + std::to_string(spec.bytes));
  return OkStatus();
}

}  // namespace hetrt::micro
