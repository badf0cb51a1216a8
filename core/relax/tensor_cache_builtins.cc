// The tensor cache's builtins, by TVM name (and MLC-LLM's older ndarray_cache
// spelling): a process-wide cache of named weights that load() fills from a
// tensor-cache.json folder onto one of the VM's devices, and the parameter
// arrays a model's packed_params are made of (docs/llm.md).
#include <array>

#include "hetrt/relax/tensor_cache.h"
#include "relax/builtin_args.h"
#include "relax/interpreter.h"

namespace hetrt {
namespace {

using Kind = RelaxValue::Kind;

RelaxValue TupleOf(std::vector<Tensor> tensors) {
  RelaxTuple items;
  items.reserve(tensors.size());
  for (Tensor& t : tensors) items.push_back(RelaxValue::FromTensor(std::move(t)));
  return RelaxValue::Tuple(std::move(items));
}

// load(path, device_type, device_id)
Status Load(RelaxInterpreter& vm, const RelaxCallArgs& args, RelaxValue* result) {
  HETRT_ASSIGN_OR_RETURN(const std::string* path, StringArg(args, 0));
  HETRT_ASSIGN_OR_RETURN(int64_t type, IntArg(args, 1));
  HETRT_ASSIGN_OR_RETURN(int64_t id, IntArg(args, 2));
  const DLDevice target{static_cast<DLDeviceType>(type), static_cast<int32_t>(id)};
  HETRT_ASSIGN_OR_RETURN(Device device, vm.plugins->DeviceFor(target));
  HETRT_ASSIGN_OR_RETURN(TensorCacheIndex index, TensorCacheIndex::Open(*path));
  HETRT_ASSIGN_OR_RETURN(std::vector<Tensor> tensors, LoadAll(index, device));
  TensorCacheRegistry& cache = TensorCacheRegistry::Global();
  for (size_t i = 0; i < tensors.size(); ++i)
    HETRT_RETURN_IF_ERROR(cache.Insert(index.records()[i].name, std::move(tensors[i]), /*override=*/true));
  *result = RelaxValue();
  return OkStatus();
}

Status Get(RelaxInterpreter&, const RelaxCallArgs& args, RelaxValue* result) {
  HETRT_ASSIGN_OR_RETURN(const std::string* name, StringArg(args, 0));
  auto tensor = TensorCacheRegistry::Global().Get(*name);
  *result = tensor ? RelaxValue::FromTensor(std::move(*tensor)) : RelaxValue();
  return OkStatus();
}

// update(name, tensor[, override])
Status Update(RelaxInterpreter&, const RelaxCallArgs& args, RelaxValue* result) {
  HETRT_ASSIGN_OR_RETURN(const std::string* name, StringArg(args, 0));
  HETRT_ASSIGN_OR_RETURN(const Tensor* tensor, TensorArg(args, 1));
  bool override = false;
  if (args.size() > 2) {
    HETRT_ASSIGN_OR_RETURN(override, IntArg(args, 2));
  }
  HETRT_RETURN_IF_ERROR(TensorCacheRegistry::Global().Insert(*name, *tensor, override));
  *result = RelaxValue();
  return OkStatus();
}

Status Remove(RelaxInterpreter&, const RelaxCallArgs& args, RelaxValue* result) {
  HETRT_ASSIGN_OR_RETURN(const std::string* name, StringArg(args, 0));
  TensorCacheRegistry::Global().Remove(*name);
  *result = RelaxValue();
  return OkStatus();
}

Status Clear(RelaxInterpreter&, const RelaxCallArgs&, RelaxValue* result) {
  TensorCacheRegistry::Global().Clear();
  *result = RelaxValue();
  return OkStatus();
}

// param_array_from_cache(prefix, n): prefix_0 ... prefix_{n-1}; n = -1: until the first missing
Status ByPrefix(RelaxInterpreter&, const RelaxCallArgs& args, RelaxValue* result) {
  HETRT_ASSIGN_OR_RETURN(const std::string* prefix, StringArg(args, 0));
  HETRT_ASSIGN_OR_RETURN(int64_t n, IntArg(args, 1));
  HETRT_ASSIGN_OR_RETURN(auto tensors, ParamArrayByPrefix(TensorCacheRegistry::Global(), *prefix, n));
  *result = TupleOf(std::move(tensors));
  return OkStatus();
}

Status NamesInto(const RelaxValue& v, uint32_t index, std::vector<std::string>* names) {
  if (v.is(Kind::kString)) {
    names->push_back(v.string());
    return OkStatus();
  }
  if (!v.is(Kind::kTuple)) return WrongKind(index, "weight names (strings)", v);
  for (const RelaxValue& item : v.tuple()) {
    if (!item.is(Kind::kString)) return WrongKind(index, "a tuple of weight names (strings)", item);
    names->push_back(item.string());
  }
  return OkStatus();
}

// param_array_from_cache_by_name(names) and its unpacked form (name0, name1, ...)
Status ByName(RelaxInterpreter&, const RelaxCallArgs& args, RelaxValue* result) {
  std::vector<std::string> names;
  for (uint32_t i = 0; i < args.size(); ++i) HETRT_RETURN_IF_ERROR(NamesInto(args[i], i, &names));
  HETRT_ASSIGN_OR_RETURN(auto tensors, ParamArrayByName(TensorCacheRegistry::Global(), names));
  *result = TupleOf(std::move(tensors));
  return OkStatus();
}

constexpr std::array kTensorCacheBuiltins = {
    NamedRelaxBuiltin{"vm.builtin.tensor_cache.load", &Load},
    NamedRelaxBuiltin{"vm.builtin.tensor_cache.get", &Get},
    NamedRelaxBuiltin{"vm.builtin.tensor_cache.update", &Update},
    NamedRelaxBuiltin{"vm.builtin.tensor_cache.remove", &Remove},
    NamedRelaxBuiltin{"vm.builtin.tensor_cache.clear", &Clear},
    NamedRelaxBuiltin{"vm.builtin.ndarray_cache.load", &Load},
    NamedRelaxBuiltin{"vm.builtin.ndarray_cache.get", &Get},
    NamedRelaxBuiltin{"vm.builtin.ndarray_cache.update", &Update},
    NamedRelaxBuiltin{"vm.builtin.ndarray_cache.remove", &Remove},
    NamedRelaxBuiltin{"vm.builtin.ndarray_cache.clear", &Clear},
    NamedRelaxBuiltin{"vm.builtin.param_array_from_cache", &ByPrefix},
    NamedRelaxBuiltin{"vm.builtin.param_array_from_cache_by_name", &ByName},
    NamedRelaxBuiltin{"vm.builtin.param_array_from_cache_by_name_unpacked", &ByName},
};

}  // namespace

std::span<const NamedRelaxBuiltin> TensorCacheRelaxBuiltins() { return kTensorCacheBuiltins; }

}  // namespace hetrt
