// What every executor offers its users (graph, AOT): named inputs and outputs,
// set_input / run / get_output.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "hetrt/base/tensor.h"

namespace hetrt {

// The dtype and shape an executor expects of an input or gives for an output.
struct TensorSpec {
  DLDataType dtype{kDLFloat, 32, 1};
  std::vector<int64_t> shape;
};

inline TensorSpec SpecOf(const Tensor& t) { return {t.dtype(), t.shape()}; }

// Thread contract: thread-compatible. One thread at a time calls an executor
// (hetrt serve gives each instance its own executor and thread); distinct
// executors, over one module too, run concurrently.
class Executor {
 public:
  virtual ~Executor() = default;
  virtual int NumInputs() const = 0;
  virtual int NumOutputs() const = 0;
  virtual const std::string& InputName(int index) const = 0;
  virtual std::string OutputName(int index) const = 0;
  virtual TensorSpec InputSpec(int index) const = 0;
  virtual TensorSpec OutputSpec(int index) const = 0;
  // Inputs the user must provide (not bound to a param); all of them unless
  // the executor binds params.
  virtual std::vector<int> UnboundInputs() const {
    std::vector<int> all;
    for (int i = 0; i < NumInputs(); ++i) all.push_back(i);
    return all;
  }
  virtual Status SetInput(int index, const Tensor& value) = 0;
  virtual Status Run() = 0;
  // Waits for work queued on devices (Run may return before device kernels end).
  virtual Status Synchronize() { return OkStatus(); }
  // A host copy of output `index`.
  virtual Result<Tensor> GetOutput(int index) const = 0;

  // -1 when there is no input of that name.
  int InputIndex(std::string_view name) const {
    for (int i = 0; i < NumInputs(); ++i)
      if (InputName(i) == name) return i;
    return -1;
  }
  Status SetInput(std::string_view name, const Tensor& value) {
    const int index = InputIndex(name);
    if (index < 0) return NotFound("set_input: the model has no input named '" + std::string(name) + "'");
    return SetInput(index, value);
  }
};

}  // namespace hetrt
