// One model open on a micro device (in this process, or driven over a
// transport): inputs and outputs as host bytes, the plugin's own interface
// behind the ABI's whole-model table (micro_plugin.cc adapts it to C).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hetrt/base/status.h"
#include "hetrt/sdk/tensor_layout.h"  // DLDataType

namespace hetrt::micro {

// A model's input or output as the device holds it: dense, `bytes` long.
struct TensorSpec {
  std::string name;
  DLDataType dtype{kDLFloat, 32, 1};
  size_t bytes = 0;
  std::vector<int64_t> shape;
};

class ModelSession {
 public:
  virtual ~ModelSession() = default;
  virtual const std::vector<TensorSpec>& inputs() const = 0;
  virtual const std::vector<TensorSpec>& outputs() const = 0;
  // `bytes` must be exactly the input's size.
  virtual Status SetInput(int index, std::span<const uint8_t> bytes) = 0;
  virtual Status Run() = 0;
  // Fills `out`, which must be exactly the output's size.
  virtual Status GetOutput(int index, std::span<uint8_t> out) const = 0;

  int NumInputs() const { return static_cast<int>(inputs().size()); }
  int NumOutputs() const { return static_cast<int>(outputs().size()); }
  // -1 when there is no input of that name.
  int InputIndex(std::string_view name) const;
  Result<std::vector<uint8_t>> GetOutput(int index) const;

 protected:
  // OUT_OF_RANGE for an index past the tensors, INVALID_ARGUMENT for a
  // buffer of another size than the tensor's.
  Status CheckIo(const std::vector<TensorSpec>& list, int index, size_t bytes, const char* call) const;
};

}  // namespace hetrt::micro
