// One function of a Relax VM behind the Executor interface (set_input / run /
// get_output), so the CLI, the server and Python run Relax models as they run
// graphs: inputs are the function's parameters by name, outputs its result
// flattened depth-first (output_0, output_1, ...). Shapes a function leaves
// symbolic read as -1 in the specs and are bound per call from the inputs.
//
// Thread contract: thread-compatible (one thread at a time).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "hetrt/exec/executor.h"
#include "hetrt/formats/params.h"
#include "hetrt/relax/vm.h"

namespace hetrt {

// What the bytecode says about a function's parameters and result, read once
// from its checks (check_tensor_info, match_shape) and allocations.
struct RelaxParamInfo {
  std::string name;
  TensorSpec spec;            // shape -1 where symbolic; empty shape and code 255 when unknown
  bool is_tensor = true;      // false: a shape, tuple or scalar parameter
  int device_index = 0;       // the VM device its kernels read it on
};
struct RelaxSignature {
  std::vector<RelaxParamInfo> params;
  std::vector<TensorSpec> outputs;  // flattened; empty when the analysis cannot tell
  bool outputs_known = false;
  // Parameter index -> symbolic dims (shape-heap slots) it binds, for batching.
  std::vector<std::vector<int64_t>> heap_slots;
  // The largest VM device index the function allocates on (-1: none), and the
  // devices it copies to (to_device), which the VM must have.
  int max_device_index = -1;
  std::vector<DLDevice> copy_targets;
};
RelaxSignature AnalyzeRelaxFunction(const RelaxExecutable& exe, uint32_t function,
                                    const std::vector<DLDevice>& devices);

class RelaxExecutor final : public Executor {
 public:
  static Result<std::unique_ptr<RelaxExecutor>> Create(std::unique_ptr<RelaxVirtualMachine> vm,
                                                       const std::string& function = "main");

  int NumInputs() const override { return static_cast<int>(signature_.params.size()); }
  int NumOutputs() const override;
  const std::string& InputName(int index) const override { return signature_.params[static_cast<size_t>(index)].name; }
  std::string OutputName(int index) const override { return "output_" + std::to_string(index); }
  TensorSpec InputSpec(int index) const override { return signature_.params[static_cast<size_t>(index)].spec; }
  TensorSpec OutputSpec(int index) const override;
  // Copies the value (any shape the function accepts) onto the parameter's device.
  Status SetInput(int index, const Tensor& value) override;
  using Executor::SetInput;
  Status Run() override;
  // Run, with every Call instruction timed (RelaxVirtualMachine::InvokeProfiled).
  Status RunProfiled(RelaxProfile* profile);
  Status Synchronize() override { return vm_->Synchronize(); }
  // Weights passed as parameters (relax.frontend.detach_params): each named
  // input is set once and no longer counts among the inputs a caller gives.
  // Names that are not parameters are ignored (a params file may hold more).
  Status BindParams(const std::vector<NamedTensor>& params);
  std::vector<int> UnboundInputs() const override;
  Result<Tensor> GetOutput(int index) const override;

  RelaxVirtualMachine& vm() { return *vm_; }
  const RelaxSignature& signature() const { return signature_; }
  const std::string& function_name() const { return function_name_; }
  // The last run's result as the function returned it (tensors on their devices).
  const RelaxValue& result() const { return result_; }

 private:
  RelaxExecutor() = default;
  std::unique_ptr<RelaxVirtualMachine> vm_;
  std::string function_name_;
  uint32_t function_ = 0;
  RelaxSignature signature_;
  std::vector<RelaxValue> inputs_;
  std::vector<bool> bound_;  // set by BindParams
  RelaxValue result_;
  std::vector<Tensor> outputs_;
  bool ran_ = false;
};

}  // namespace hetrt
