#include "hetrt/exec/relax_executor.h"

#include "hetrt/base/dtype.h"
#include "hetrt/plugin_host/plugin_registry.h"

namespace hetrt {

// Recordings a model's function keeps, one per set of input shapes.
constexpr size_t kReplayedShapes = 4;

Result<std::unique_ptr<RelaxExecutor>> RelaxExecutor::Create(std::unique_ptr<RelaxVirtualMachine> vm,
                                                             const std::string& function) {
  std::unique_ptr<RelaxExecutor> ex(new RelaxExecutor());
  HETRT_ASSIGN_OR_RETURN(ex->function_, vm->FindFunction(function));
  ex->function_name_ = function;
  ex->signature_ = AnalyzeRelaxFunction(vm->executable(), ex->function_, vm->devices());
  // Devices are positional (TVM's vm_initialization order): say which are
  // missing now rather than fail mid-call.
  const std::vector<DLDevice>& devices = vm->devices();
  std::string given;
  for (const DLDevice& d : devices) given += (given.empty() ? "" : ", ") + DeviceToString(d);
  std::string wanted;
  for (const DLDevice& d : ex->signature_.copy_targets)
    if (wanted.find(DeviceToString(d)) == std::string::npos) wanted += (wanted.empty() ? "" : ", ") + DeviceToString(d);
  const std::string hint = "; pass --device once per device the model was built for, in its vdevice order" +
                           (wanted.empty() ? std::string() : " (it copies to " + wanted + ")");
  if (ex->signature_.max_device_index >= static_cast<int>(devices.size()))
    return InvalidArgument("function '" + function + "' allocates on device index " +
                           std::to_string(ex->signature_.max_device_index) + ", but the VM has " +
                           std::to_string(devices.size()) + " device(s): " + given + hint);
  for (const DLDevice& d : ex->signature_.copy_targets) {
    bool found = false;
    for (const DLDevice& have : devices) found |= SameDevice(have, d);
    if (!found)
      return InvalidArgument("function '" + function + "' copies to " + DeviceToString(d) +
                             ", which is not among the VM's devices (" + given + ")" + hint);
  }
  for (RelaxParamInfo& p : ex->signature_.params)
    if (p.device_index >= static_cast<int>(devices.size())) p.device_index = 0;  // unreachable after the checks
  ex->inputs_.resize(ex->signature_.params.size());
  ex->bound_.assign(ex->signature_.params.size(), false);
  ex->vm_ = std::move(vm);
  // Runs repeat with the same shapes: from the second such run on, the call
  // is replayed instead of interpreted (RelaxVirtualMachine::EnableReplay,
  // one recording per input shapes, at most kReplayedShapes). A function
  // that branches stays interpreted.
  (void)ex->vm_->EnableReplay(ex->function_, kReplayedShapes);
  return ex;
}

int RelaxExecutor::NumOutputs() const {
  if (ran_) return static_cast<int>(outputs_.size());
  return static_cast<int>(signature_.outputs.size());
}

TensorSpec RelaxExecutor::OutputSpec(int index) const {
  if (ran_ && index >= 0 && index < static_cast<int>(outputs_.size()) && !signature_.outputs_known)
    return SpecOf(outputs_[static_cast<size_t>(index)]);
  if (index >= 0 && index < static_cast<int>(signature_.outputs.size()))
    return signature_.outputs[static_cast<size_t>(index)];
  return {};
}

Status RelaxExecutor::SetInput(int index, const Tensor& value) {
  if (index < 0 || index >= NumInputs())
    return OutOfRange("set_input: index " + std::to_string(index) + " (function '" + function_name_ + "' takes " +
                      std::to_string(NumInputs()) + ")");
  const RelaxParamInfo& param = signature_.params[static_cast<size_t>(index)];
  const TensorSpec& spec = param.spec;
  const std::string where = "set_input '" + param.name + "'";
  // What the bytecode will check anyway, said here with the parameter's name.
  if (spec.dtype.code != 255 && value.dtype() != spec.dtype)
    return InvalidArgument(where + ": dtype " + DataTypeToString(value.dtype()) + ", the function expects " +
                           DataTypeToString(spec.dtype));
  if (!spec.shape.empty() && spec.shape.size() != value.shape().size())
    return InvalidArgument(where + ": shape " + ShapeToString(value.shape()) + ", the function expects rank " +
                           std::to_string(spec.shape.size()) + " " + ShapeToString(spec.shape));
  for (size_t i = 0; i < spec.shape.size(); ++i)
    if (spec.shape[i] >= 0 && spec.shape[i] != value.shape()[i])
      return InvalidArgument(where + ": shape " + ShapeToString(value.shape()) + ", the function expects " +
                             ShapeToString(spec.shape) + " (-1: any)");
  const DLDevice target = vm_->devices()[static_cast<size_t>(param.device_index)];
  // Reuses the executor's copy of the input when the shape is unchanged.
  RelaxValue& slot = inputs_[static_cast<size_t>(index)];
  if (!slot.is(RelaxValue::Kind::kTensor) || slot.tensor().shape() != value.shape() ||
      slot.tensor().dtype() != value.dtype() || slot.tensor().device().device_type != target.device_type) {
    Result<Tensor> fresh = Status(StatusCode::kInternal, "unset");
    if (target.device_type == kDLCPU) {
      fresh = Tensor::EmptyHost(value.shape(), value.dtype());
    } else {
      HETRT_ASSIGN_OR_RETURN(Device device, vm_->plugins().DeviceFor(target));
      fresh = Tensor::Empty(value.shape(), value.dtype(), device.allocator());
    }
    if (!fresh.ok()) return fresh.status().WithContext(where);
    slot = RelaxValue::FromTensor(std::move(fresh).value());
  }
  return vm_->plugins().CopyTensor(value, slot.tensor()).WithContext(where);
}

Status RelaxExecutor::BindParams(const std::vector<NamedTensor>& params) {
  for (const NamedTensor& p : params) {
    const int index = InputIndex(p.name);
    if (index < 0) continue;
    HETRT_RETURN_IF_ERROR(SetInput(index, p.tensor));
    bound_[static_cast<size_t>(index)] = true;
  }
  return OkStatus();
}

std::vector<int> RelaxExecutor::UnboundInputs() const {
  std::vector<int> unbound;
  for (int i = 0; i < NumInputs(); ++i)
    if (!bound_[static_cast<size_t>(i)]) unbound.push_back(i);
  return unbound;
}

Status RelaxExecutor::Run() { return RunProfiled(nullptr); }

Status RelaxExecutor::RunProfiled(RelaxProfile* profile) {
  for (size_t i = 0; i < inputs_.size(); ++i)
    if (inputs_[i].is_null())
      return FailedPrecondition("input '" + signature_.params[i].name + "' of function '" + function_name_ +
                                "' was not set");
  // The last result goes back to the pools first, so that a run reuses its blocks.
  result_ = RelaxValue();
  outputs_.clear();
  ran_ = false;
  auto result = profile ? vm_->InvokeProfiled(function_, inputs_, profile) : vm_->Invoke(function_, inputs_);
  if (!result.ok()) return result.status();
  result_ = std::move(result).value();
  HETRT_ASSIGN_OR_RETURN(outputs_, FlattenRelaxTensors(result_), "function '" + function_name_ + "'");
  ran_ = true;
  return OkStatus();
}

Result<Tensor> RelaxExecutor::GetOutput(int index) const {
  if (!ran_)
    return FailedPrecondition("get_output: no result of '" + function_name_ + "' (none ran, or the last run failed)");
  if (index < 0 || index >= static_cast<int>(outputs_.size()))
    return OutOfRange("get_output: index " + std::to_string(index) + " (" + std::to_string(outputs_.size()) +
                      " outputs)");
  const Tensor& out = outputs_[static_cast<size_t>(index)];
  if (out.device().device_type != kDLCPU) HETRT_RETURN_IF_ERROR(vm_->Synchronize());
  return vm_->plugins().ToHost(out);
}

}  // namespace hetrt
