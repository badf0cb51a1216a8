#include "hetrt/exec/aot_executor.h"

#include "tvm_abi/backend_routes.h"

#include "hetrt/base/dtype.h"
#include "hetrt/exec/factory_modules.h"

namespace hetrt {
namespace {

// The C structs get_c_metadata returns (TVM's metadata version 1).
struct CTensorInfo {
  const char* name;
  const int64_t* shape;
  int64_t num_shape;
  DLDataType dtype;
};
struct CMetadata {
  int64_t version;
  const CTensorInfo* inputs;
  int64_t num_inputs;
  const CTensorInfo* outputs;
  int64_t num_outputs;
  const CTensorInfo* workspace_pools;
  int64_t num_workspace_pools;
  const void* constant_pools;
  int64_t num_constant_pools;
  const char* mod_name;
};

constexpr int64_t kMaxTensors = 1 << 16;
constexpr int64_t kMaxDims = 64;

Status ReadTensorInfos(const CTensorInfo* infos, int64_t count, const char* what, std::vector<std::string>* names,
                       std::vector<Tensor>* tensors) {
  if (count < 0 || count > kMaxTensors || (count > 0 && infos == nullptr))
    return DataLoss(std::string("AOT metadata: bad ") + what + " count " + std::to_string(count));
  for (int64_t i = 0; i < count; ++i) {
    const CTensorInfo& info = infos[i];
    if (info.name == nullptr || info.num_shape < 0 || info.num_shape > kMaxDims ||
        (info.num_shape > 0 && info.shape == nullptr))
      return DataLoss(std::string("AOT metadata: ") + what + " " + std::to_string(i) + " is malformed");
    std::vector<int64_t> shape(info.shape, info.shape + info.num_shape);
    auto t = Tensor::EmptyHost(shape, info.dtype);
    if (!t.ok()) return t.status().WithContext(std::string("AOT ") + what + " '" + info.name + "'");
    names->push_back(info.name);
    tensors->push_back(std::move(t).value());
  }
  return OkStatus();
}

}  // namespace

Result<std::unique_ptr<AotExecutor>> AotExecutor::Create(std::shared_ptr<Module> root, std::vector<DLDevice> devices,
                                                         PluginRegistry* plugins) {
  if (devices.size() != 1 || devices[0].device_type != kDLCPU)
    return InvalidArgument("the AOT executor runs on exactly one CPU device");
  std::unique_ptr<AotExecutor> ex(new AotExecutor());
  ex->root_ = root;
  ex->plugins_ = plugins ? plugins : &PluginRegistry::Global();
  ex->backend_registry_ = plugins;
  HETRT_ASSIGN_OR_RETURN(const PackedFunc* get_metadata, root->GetFunction("get_c_metadata"));
  if (get_metadata == nullptr)
    return NotFound("AOT module '" + root->type_key() + "' has no get_c_metadata function in its imports");
  hetrt_value_t ret{};
  int32_t ret_code = HETRT_TYPE_NULL;
  HETRT_RETURN_IF_ERROR(
      CallPackedFunc(*get_metadata, nullptr, nullptr, 0, &ret, &ret_code).WithContext("get_c_metadata"));
  const auto* md = static_cast<const CMetadata*>(ret.v_handle);
  if (ret_code != HETRT_TYPE_HANDLE || md == nullptr) return DataLoss("get_c_metadata returned no metadata handle");
  if (md->version != 1)
    return Unimplemented("AOT metadata version " + std::to_string(md->version) + " (hetrt reads version 1)");
  if (md->mod_name == nullptr) return DataLoss("AOT metadata has no mod_name");
  ex->module_name_ = md->mod_name;
  HETRT_RETURN_IF_ERROR(ReadTensorInfos(md->inputs, md->num_inputs, "input", &ex->input_names_, &ex->inputs_));
  HETRT_RETURN_IF_ERROR(ReadTensorInfos(md->outputs, md->num_outputs, "output", &ex->output_names_, &ex->outputs_));
  std::vector<std::string> pool_names;
  HETRT_RETURN_IF_ERROR(
      ReadTensorInfos(md->workspace_pools, md->num_workspace_pools, "workspace pool", &pool_names, &ex->pools_));
  const std::string entry = ex->module_name_ + "___tvm_main__";
  HETRT_ASSIGN_OR_RETURN(ex->main_, root->GetFunction(entry));
  if (ex->main_ == nullptr) return NotFound("AOT entry function '" + entry + "' not found");
  // Arguments: inputs, outputs, then workspace pools, all as DLTensors.
  for (auto* list : {&ex->inputs_, &ex->outputs_, &ex->pools_})
    for (Tensor& t : *list) ex->args_.push_back({.v_handle = t.dl()});
  ex->codes_.assign(ex->args_.size(), HETRT_TYPE_DLTENSOR);
  if (auto* factory = dynamic_cast<AotExecutorFactoryModule*>(root.get()))
    for (const auto& p : factory->params())
      if (ex->InputIndex(p.name) >= 0) HETRT_RETURN_IF_ERROR(ex->SetInput(p.name, p.tensor));
  return ex;
}

Status AotExecutor::SetInput(int index, const Tensor& value) {
  if (index < 0 || index >= NumInputs()) return OutOfRange("set_input: index " + std::to_string(index));
  Tensor& dst = inputs_[static_cast<size_t>(index)];
  if (value.dtype() != dst.dtype() || value.nbytes() != dst.nbytes())
    return InvalidArgument("set_input '" + InputName(index) + "': got " + ShapeToString(value.shape()) + " " +
                           DataTypeToString(value.dtype()) + ", the model expects " + ShapeToString(dst.shape()) + " " +
                           DataTypeToString(dst.dtype()));
  return plugins_->CopyTensor(value, dst);
}

Status AotExecutor::Run() {
  // Compiled code reaches this executor's plugins.
  BackendRoutesScope backend(backend_registry_ ? backend_registry_->backend_routes() : nullptr);
  return CallPackedFunc(*main_, args_.data(), codes_.data(), static_cast<int32_t>(args_.size()))
      .WithContext(module_name_ + "___tvm_main__");
}

Result<Tensor> AotExecutor::GetOutput(int index) const {
  if (index < 0 || index >= NumOutputs()) return OutOfRange("get_output: index " + std::to_string(index));
  return plugins_->ToHost(outputs_[static_cast<size_t>(index)]);
}

}  // namespace hetrt
