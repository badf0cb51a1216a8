// The vm.builtin.* functions Relax bytecode calls (docs/relax-vm.md (e)), with
// TVM's meaning: storage and tensor allocation, shape checks and the shape
// heap, tuples, closures, conditions and copies between devices. Each checks
// its arguments: a wrong kind or count is an error naming the argument, never
// a crash.
#include <algorithm>
#include <array>
#include <cstring>
#include <string_view>

#include "hetrt/base/dtype.h"
#include "relax/builtin_args.h"
#include "relax/interpreter.h"

namespace hetrt {

Status WrongKind(uint32_t index, const char* what, const RelaxValue& got) {
  return InvalidArgument("argument " + std::to_string(index) + " must be " + what + ", got " + got.Describe());
}

Status TooFewArgs(const RelaxCallArgs& args, uint32_t at_least) {
  return InvalidArgument("takes at least " + std::to_string(at_least) + " arguments, got " +
                         std::to_string(args.size()));
}

Status MissingArg(uint32_t index) { return InvalidArgument("argument " + std::to_string(index) + " is missing"); }

namespace {

using Kind = RelaxValue::Kind;

// The error-context string codegen passes last ("ErrorContext(fn=main, ...)").
std::string ErrorContext(const RelaxCallArgs& args, uint32_t index) {
  if (index < args.size() && args[index].is(Kind::kString)) return args[index].string() + ": ";
  return "";
}

// The shape heap: a host int64 tensor, or null when a function has no symbolic dims.
struct Heap {
  int64_t* slots = nullptr;
  int64_t size = 0;
};

Result<Heap> HeapArg(const RelaxCallArgs& args, uint32_t i) {
  const RelaxValue& v = args[i];
  if (v.is_null()) return Heap{};
  if (!v.is(Kind::kTensor)) return WrongKind(i, "the shape heap", v);
  const Tensor& t = v.tensor();
  if (t.device().device_type != kDLCPU || t.dtype().code != kDLInt || t.dtype().bits != 64 || t.shape().size() != 1)
    return WrongKind(i, "the shape heap (a host int64 vector)", v);
  return Heap{reinterpret_cast<int64_t*>(static_cast<uint8_t*>(t.data()) + t.dl()->byte_offset), t.shape()[0]};
}

Result<int64_t*> HeapSlot(const Heap& heap, int64_t slot) {
  if (slot < 0 || slot >= heap.size)
    return OutOfRange("shape heap slot " + std::to_string(slot) + " out of range (" + std::to_string(heap.size) +
                      " slots)");
  return &heap.slots[slot];
}

// ---- allocation

// alloc_storage(vm, size: Shape[1], device_index, dtype_hint, scope) -> Storage
Status AllocStorage(RelaxInterpreter& vm, const RelaxCallArgs& args, RelaxValue* result) {
  HETRT_RETURN_IF_ERROR(NeedArgs(args, 4));
  if (!args[1].is(Kind::kShape) || args[1].shape().size() != 1) return WrongKind(1, "a 1-element shape", args[1]);
  const int64_t nbytes = args[1].shape()[0];
  if (nbytes < 0) return InvalidArgument("storage of " + std::to_string(nbytes) + " bytes");
  HETRT_ASSIGN_OR_RETURN(int64_t index, IntArg(args, 2));
  if (index == -1) index = static_cast<int64_t>(vm.devices.size()) - 1;
  if (index < 0 || index >= static_cast<int64_t>(vm.devices.size()))
    return OutOfRange("device index " + std::to_string(index) + " but the VM has " + std::to_string(vm.devices.size()) +
                      " device(s); pass one --device per vdevice, in order");
  if (args.size() > 4 && args[4].is(Kind::kString) && !args[4].string().empty() && args[4].string() != "global")
    return Unimplemented("storage scope '" + args[4].string() + "' (hetrt allocates only \"global\" memory)");
  RelaxVmDevice& device = vm.devices[static_cast<size_t>(index)];
  HETRT_ASSIGN_OR_RETURN(
      auto block, Tensor::Empty({nbytes}, DLDataType{kDLUInt, 8, 1}, *device.allocator),
      "storage of " + std::to_string(nbytes) + " bytes on " + DeviceToString(device.device.device()));
  *result = RelaxValue::Storage(std::move(block));
  return OkStatus();
}

Status CheckAllocDataType(DLDataType t) {
  const bool bits_ok =
      (t.bits % 8 == 0 && t.bits != 0 && (t.bits & (t.bits - 1)) == 0) || (t.code == kDLUInt && t.bits == 1);
  if (!bits_ok || t.lanes < 1) return InvalidArgument("cannot allocate a tensor of dtype " + DataTypeToString(t));
  return OkStatus();
}

// A view of `base` as the result of an instruction with a spare: made in the
// spare's tensor when nothing else holds it, else new and kept as the spare.
Status ViewIntoSpare(const Tensor& base, std::span<const int64_t> shape, DLDataType dtype, uint64_t offset,
                     RelaxValue* spare, RelaxValue* result) {
  if (spare != nullptr && spare->is(Kind::kTensor) && spare->use_count() == 1) {
    HETRT_RETURN_IF_ERROR(spare->tensor().AssignView(base, shape, dtype, offset));
    *result = *spare;
    return OkStatus();
  }
  HETRT_ASSIGN_OR_RETURN(Tensor view, base.View(std::vector<int64_t>(shape.begin(), shape.end()), dtype, offset));
  *result = RelaxValue::FromTensor(std::move(view));
  if (spare != nullptr) *spare = *result;
  return OkStatus();
}

// alloc_tensor(storage, offset, shape, dtype) -> Tensor (a view of the storage)
Status AllocTensorReusing(RelaxInterpreter&, const RelaxCallArgs& args, RelaxValue* spare, RelaxValue* result) {
  HETRT_RETURN_IF_ERROR(NeedArgs(args, 4));
  if (!args[0].is(Kind::kStorage)) return WrongKind(0, "a storage", args[0]);
  HETRT_ASSIGN_OR_RETURN(int64_t offset, IntArg(args, 1));
  if (!args[2].is(Kind::kShape)) return WrongKind(2, "a shape", args[2]);
  if (!args[3].is(Kind::kDataType)) return WrongKind(3, "a dtype", args[3]);
  HETRT_RETURN_IF_ERROR(CheckAllocDataType(args[3].dtype()));
  if (offset < 0) return InvalidArgument("tensor at negative offset " + std::to_string(offset));
  return ViewIntoSpare(args[0].tensor(), args[2].shape(), args[3].dtype(), static_cast<uint64_t>(offset), spare,
                       result);
}

Status AllocTensor(RelaxInterpreter& vm, const RelaxCallArgs& args, RelaxValue* result) {
  return AllocTensorReusing(vm, args, nullptr, result);
}

// alloc_shape_heap(vm, size) -> host int64 tensor
Status AllocShapeHeap(RelaxInterpreter& vm, const RelaxCallArgs& args, RelaxValue* result) {
  HETRT_ASSIGN_OR_RETURN(int64_t size, IntArg(args, 1));
  if (size < 0 || size > (int64_t{1} << 20)) return InvalidArgument("shape heap of " + std::to_string(size) + " slots");
  HETRT_ASSIGN_OR_RETURN(Tensor heap, Tensor::Empty({size}, DLDataType{kDLInt, 64, 1}, *vm.devices.back().allocator));
  std::memset(heap.data(), 0, static_cast<size_t>(heap.nbytes()));
  *result = RelaxValue::FromTensor(std::move(heap));
  return OkStatus();
}

// ---- registers and tuples

Status NullValue(RelaxInterpreter&, const RelaxCallArgs&, RelaxValue* result) {
  *result = RelaxValue();
  return OkStatus();
}

Status Copy(RelaxInterpreter&, const RelaxCallArgs& args, RelaxValue* result) {
  HETRT_RETURN_IF_ERROR(NeedArgs(args, 1));
  *result = args[0];
  return OkStatus();
}

Status MakeTuple(RelaxInterpreter&, const RelaxCallArgs& args, RelaxValue* result) {
  RelaxTuple items(args.size());
  for (uint32_t i = 0; i < args.size(); ++i) items[i] = args[i];
  *result = RelaxValue::Tuple(std::move(items));
  return OkStatus();
}

Status TupleGetItem(RelaxInterpreter&, const RelaxCallArgs& args, RelaxValue* result) {
  HETRT_RETURN_IF_ERROR(NeedArgs(args, 2));
  if (!args[0].is(Kind::kTuple)) return WrongKind(0, "a tuple", args[0]);
  HETRT_ASSIGN_OR_RETURN(int64_t index, IntArg(args, 1));
  const RelaxTuple& t = args[0].tuple();
  if (index < 0 || index >= static_cast<int64_t>(t.size()))
    return OutOfRange("tuple index " + std::to_string(index) + " of a tuple of " + std::to_string(t.size()));
  *result = t[static_cast<size_t>(index)];
  return OkStatus();
}

// ---- shapes

// The dims of a tensor or shape argument.
Result<const std::vector<int64_t>*> DimsOf(const RelaxCallArgs& args, uint32_t i) {
  if (args[i].is(Kind::kTensor)) return &args[i].tensor().shape();
  if (args[i].is(Kind::kShape)) return &args[i].shape();
  return WrongKind(i, "a tensor or a shape", args[i]);
}

Status ShapeOf(RelaxInterpreter&, const RelaxCallArgs& args, RelaxValue* result) {
  HETRT_RETURN_IF_ERROR(NeedArgs(args, 1));
  if (!args[0].is(Kind::kTensor)) return WrongKind(0, "a tensor", args[0]);
  *result = RelaxValue::Shape(args[0].tensor().shape());
  return OkStatus();
}

// check_tensor_info(x, ndim, [dtype,] err)
Status CheckTensorInfo(RelaxInterpreter&, const RelaxCallArgs& args, RelaxValue*) {
  HETRT_RETURN_IF_ERROR(NeedArgs(args, 3));
  const uint32_t err = args.size() - 1;
  auto context = [&] { return ErrorContext(args, err); };  // built only on error
  if (!args[0].is(Kind::kTensor)) return InvalidArgument(context() + "expected a tensor, got " + args[0].Describe());
  const Tensor& x = args[0].tensor();
  HETRT_ASSIGN_OR_RETURN(int64_t ndim, IntArg(args, 1));
  if (ndim != -1 && static_cast<int64_t>(x.shape().size()) != ndim)
    return InvalidArgument(context() + "expected a tensor of rank " + std::to_string(ndim) + ", got rank " +
                           std::to_string(x.shape().size()) + " " + ShapeToString(x.shape()));
  if (args.size() >= 4 && args[2].is(Kind::kDataType)) {
    const DLDataType want = args[2].dtype();
    const bool any = want.code == kDLOpaqueHandle && want.bits == 0 && want.lanes == 0;
    if (!any && want != x.dtype())
      return InvalidArgument(context() + "expected dtype " + DataTypeToString(want) + ", got " +
                             DataTypeToString(x.dtype()));
  }
  return OkStatus();
}

// check_shape_info(x, ndim, err) and check_tuple_info(x, size, err): `x` is
// a value of `kind` with `n` dims / items (-1: any number, for shapes).
Status CheckSized(const RelaxCallArgs& args, Kind kind, const char* what, const char* unit) {
  HETRT_RETURN_IF_ERROR(NeedArgs(args, 3));
  auto context = [&] { return ErrorContext(args, 2); };  // built only on error
  if (!args[0].is(kind)) return InvalidArgument(context() + "expected a " + what + ", got " + args[0].Describe());
  HETRT_ASSIGN_OR_RETURN(int64_t n, IntArg(args, 1));
  const size_t have = kind == Kind::kShape ? args[0].shape().size() : args[0].tuple().size();
  if ((n != -1 || kind != Kind::kShape) && static_cast<int64_t>(have) != n)
    return InvalidArgument(context() + "expected a " + what + " of " + std::to_string(n) + " " + unit + ", got " +
                           args[0].Describe());
  return OkStatus();
}

Status CheckShapeInfo(RelaxInterpreter&, const RelaxCallArgs& args, RelaxValue*) {
  return CheckSized(args, Kind::kShape, "shape", "dims");
}

Status CheckTupleInfo(RelaxInterpreter&, const RelaxCallArgs& args, RelaxValue*) {
  return CheckSized(args, Kind::kTuple, "tuple", "items");
}

// check_prim_value_info(x, dtype, err)
Status CheckPrimValueInfo(RelaxInterpreter&, const RelaxCallArgs& args, RelaxValue*) {
  HETRT_RETURN_IF_ERROR(NeedArgs(args, 3));
  auto context = [&] { return ErrorContext(args, 2); };  // built only on error
  const bool want_float = args[1].is(Kind::kDataType) && args[1].dtype().code == kDLFloat;
  if (want_float ? !(args[0].is(Kind::kFloat) || args[0].is(Kind::kInt)) : !args[0].is(Kind::kInt))
    return InvalidArgument(context() + "expected a " + std::string(want_float ? "float" : "int") + ", got " +
                           args[0].Describe());
  return OkStatus();
}

// check_func_info(x, err)
Status CheckFuncInfo(RelaxInterpreter&, const RelaxCallArgs& args, RelaxValue*) {
  HETRT_RETURN_IF_ERROR(NeedArgs(args, 2));
  if (!args[0].is(Kind::kFunction) && !args[0].is(Kind::kClosure))
    return InvalidArgument(ErrorContext(args, 1) + "expected a function, got " + args[0].Describe());
  return OkStatus();
}

// match_shape(x, heap, n, (code, value) x n, err): 0 assert == value,
// 1 store to heap[value], 2 nothing, 3 assert == heap[value].
Status MatchShape(RelaxInterpreter&, const RelaxCallArgs& args, RelaxValue*) {
  HETRT_RETURN_IF_ERROR(NeedArgs(args, 3));
  HETRT_ASSIGN_OR_RETURN(const std::vector<int64_t>* dims, DimsOf(args, 0));
  HETRT_ASSIGN_OR_RETURN(Heap heap, HeapArg(args, 1));
  HETRT_ASSIGN_OR_RETURN(int64_t n, IntArg(args, 2));
  if (n < 0 || args.size() < 3 + 2 * static_cast<uint64_t>(n))
    return InvalidArgument("match_shape: " + std::to_string(n) + " dims but " + std::to_string(args.size()) +
                           " arguments");
  auto context = [&] { return ErrorContext(args, static_cast<uint32_t>(3 + 2 * n)); };  // built only on error
  if (static_cast<int64_t>(dims->size()) != n)
    return InvalidArgument(context() + "expected " + std::to_string(n) + " dims, got shape " + ShapeToString(*dims));
  for (int64_t i = 0; i < n; ++i) {
    HETRT_ASSIGN_OR_RETURN(int64_t code, IntArg(args, static_cast<uint32_t>(3 + 2 * i)));
    HETRT_ASSIGN_OR_RETURN(int64_t value, IntArg(args, static_cast<uint32_t>(4 + 2 * i)));
    const int64_t dim = (*dims)[static_cast<size_t>(i)];
    switch (code) {
      case 0:
        if (dim != value)
          return InvalidArgument(context() + "dimension " + std::to_string(i) + " of " + ShapeToString(*dims) +
                                 " must be " + std::to_string(value));
        break;
      case 1: {
        HETRT_ASSIGN_OR_RETURN(int64_t * slot, HeapSlot(heap, value));
        *slot = dim;
        break;
      }
      case 2: break;
      case 3: {
        HETRT_ASSIGN_OR_RETURN(int64_t * slot, HeapSlot(heap, value));
        if (dim != *slot)
          return InvalidArgument(context() + "dimension " + std::to_string(i) + " of " + ShapeToString(*dims) +
                                 " must be " + std::to_string(*slot) +
                                 ", the value the same symbolic dimension took before");
        break;
      }
      default: return InvalidArgument("match_shape: unknown code " + std::to_string(code));
    }
  }
  return OkStatus();
}

// make_shape(heap, n, (code, value) x n): 0 the value, 1 heap[value].
Status MakeShapeReusing(RelaxInterpreter&, const RelaxCallArgs& args, RelaxValue* spare, RelaxValue* result) {
  HETRT_RETURN_IF_ERROR(NeedArgs(args, 2));
  HETRT_ASSIGN_OR_RETURN(Heap heap, HeapArg(args, 0));
  HETRT_ASSIGN_OR_RETURN(int64_t n, IntArg(args, 1));
  if (n < 0 || args.size() != 2 + 2 * static_cast<uint64_t>(n))
    return InvalidArgument("make_shape: " + std::to_string(n) + " dims but " + std::to_string(args.size()) +
                           " arguments");
  // Written into the spare when nothing else holds it (a half-written one on
  // error is seen by no one).
  const bool reuse = spare != nullptr && spare->is(Kind::kShape) && spare->use_count() == 1;
  std::vector<int64_t> made;
  std::vector<int64_t>& dims = reuse ? spare->unshared_shape() : made;
  dims.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    HETRT_ASSIGN_OR_RETURN(int64_t code, IntArg(args, static_cast<uint32_t>(2 + 2 * i)));
    HETRT_ASSIGN_OR_RETURN(int64_t value, IntArg(args, static_cast<uint32_t>(3 + 2 * i)));
    if (code == 0) {
      dims[static_cast<size_t>(i)] = value;
    } else if (code == 1) {
      HETRT_ASSIGN_OR_RETURN(int64_t * slot, HeapSlot(heap, value));
      dims[static_cast<size_t>(i)] = *slot;
    } else {
      return InvalidArgument("make_shape: unknown code " + std::to_string(code));
    }
  }
  if (reuse) {
    *result = *spare;
    return OkStatus();
  }
  *result = RelaxValue::Shape(std::move(made));
  if (spare != nullptr) *spare = *result;
  return OkStatus();
}

Status MakeShape(RelaxInterpreter& vm, const RelaxCallArgs& args, RelaxValue* result) {
  return MakeShapeReusing(vm, args, nullptr, result);
}

// match_prim_value(value, heap, code, slot, err)
Status MatchPrimValue(RelaxInterpreter&, const RelaxCallArgs& args, RelaxValue*) {
  HETRT_RETURN_IF_ERROR(NeedArgs(args, 4));
  HETRT_ASSIGN_OR_RETURN(int64_t value, IntArg(args, 0));
  HETRT_ASSIGN_OR_RETURN(Heap heap, HeapArg(args, 1));
  HETRT_ASSIGN_OR_RETURN(int64_t code, IntArg(args, 2));
  HETRT_ASSIGN_OR_RETURN(int64_t slot_or_value, IntArg(args, 3));
  auto context = [&] { return ErrorContext(args, 4); };  // built only on error
  if (code == 0 && value != slot_or_value)
    return InvalidArgument(context() + "value " + std::to_string(value) + " must be " + std::to_string(slot_or_value));
  if (code == 1 || code == 3) {
    HETRT_ASSIGN_OR_RETURN(int64_t * slot, HeapSlot(heap, slot_or_value));
    if (code == 1) *slot = value;
    if (code == 3 && *slot != value)
      return InvalidArgument(context() + "value " + std::to_string(value) + " must be " + std::to_string(*slot));
  }
  return OkStatus();
}

// make_prim_value(heap, code, value) -> int
Status MakePrimValue(RelaxInterpreter&, const RelaxCallArgs& args, RelaxValue* result) {
  HETRT_RETURN_IF_ERROR(NeedArgs(args, 3));
  HETRT_ASSIGN_OR_RETURN(Heap heap, HeapArg(args, 0));
  HETRT_ASSIGN_OR_RETURN(int64_t code, IntArg(args, 1));
  HETRT_ASSIGN_OR_RETURN(int64_t value, IntArg(args, 2));
  if (code == 1) {
    HETRT_ASSIGN_OR_RETURN(int64_t * slot, HeapSlot(heap, value));
    value = *slot;
  }
  *result = RelaxValue::Int(value);
  return OkStatus();
}

// reshape(x, shape) -> a view sharing x's data
Status ReshapeReusing(RelaxInterpreter&, const RelaxCallArgs& args, RelaxValue* spare, RelaxValue* result) {
  HETRT_RETURN_IF_ERROR(NeedArgs(args, 2));
  if (!args[0].is(Kind::kTensor)) return WrongKind(0, "a tensor", args[0]);
  if (!args[1].is(Kind::kShape)) return WrongKind(1, "a shape", args[1]);
  const Tensor& x = args[0].tensor();
  HETRT_ASSIGN_OR_RETURN(int64_t count, ShapeNumElements(args[1].shape()));
  if (count != x.num_elements())
    return InvalidArgument("reshape of " + ShapeToString(x.shape()) + " to " + ShapeToString(args[1].shape()) +
                           " changes the element count");
  return ViewIntoSpare(x, args[1].shape(), x.dtype(), 0, spare, result);
}

Status Reshape(RelaxInterpreter& vm, const RelaxCallArgs& args, RelaxValue* result) {
  return ReshapeReusing(vm, args, nullptr, result);
}

// tensor_to_shape(x: 1-D int tensor) -> shape
Status TensorToShape(RelaxInterpreter& vm, const RelaxCallArgs& args, RelaxValue* result) {
  HETRT_RETURN_IF_ERROR(NeedArgs(args, 1));
  if (!args[0].is(Kind::kTensor) || args[0].tensor().shape().size() != 1 || args[0].tensor().dtype().code != kDLInt)
    return WrongKind(0, "a 1-D integer tensor", args[0]);
  HETRT_ASSIGN_OR_RETURN(Tensor host, vm.plugins->ToHost(args[0].tensor()));
  std::vector<int64_t> dims(static_cast<size_t>(host.shape()[0]));
  for (size_t i = 0; i < dims.size(); ++i)
    dims[i] = host.dtype().bits == 64 ? host.data_as<int64_t>()[i] : host.data_as<int32_t>()[i];
  *result = RelaxValue::Shape(std::move(dims));
  return OkStatus();
}

// ---- control flow and calls

// read_if_cond(c) -> int: an int, or an integer tensor of one element.
Status ReadIfCond(RelaxInterpreter& vm, const RelaxCallArgs& args, RelaxValue* result) {
  HETRT_RETURN_IF_ERROR(NeedArgs(args, 1));
  if (args[0].is(Kind::kInt)) {
    *result = RelaxValue::Int(args[0].int_value() != 0);
    return OkStatus();
  }
  if (!args[0].is(Kind::kTensor)) return WrongKind(0, "an int or a tensor", args[0]);
  const Tensor& t = args[0].tensor();
  const DLDataType d = t.dtype();
  if ((d.code != kDLInt && d.code != kDLUInt && d.code != 6 /* kDLBool in newer DLPack */) || t.num_elements() != 1 ||
      (d.bits != 1 && d.bits != 8 && d.bits != 16 && d.bits != 32 && d.bits != 64))
    return WrongKind(0, "a one-element integer or bool tensor", args[0]);
  HETRT_ASSIGN_OR_RETURN(Tensor host, vm.plugins->ToHost(t));
  int64_t value = 0;
  std::memcpy(&value, host.data(), static_cast<size_t>(std::max<uint64_t>(1, d.bits / 8)));
  if (d.bits == 1) value &= 1;
  *result = RelaxValue::Int(value != 0);
  return OkStatus();
}

// make_closure(f, captured...) -> closure
Status MakeClosure(RelaxInterpreter&, const RelaxCallArgs& args, RelaxValue* result) {
  HETRT_RETURN_IF_ERROR(NeedArgs(args, 1));
  if (!args[0].is(Kind::kFunction)) return WrongKind(0, "a function", args[0]);
  RelaxClosure closure;
  closure.function = args[0].function();
  for (uint32_t i = 1; i < args.size(); ++i) closure.captured.push_back(args[i]);
  *result = RelaxValue::Closure(std::move(closure));
  return OkStatus();
}

// invoke_closure(vm, f, args...)
Status InvokeClosure(RelaxInterpreter& vm, const RelaxCallArgs& args, RelaxValue* result) {
  HETRT_RETURN_IF_ERROR(NeedArgs(args, 2));
  std::vector<RelaxValue> call_args;
  for (uint32_t i = 2; i < args.size(); ++i) call_args.push_back(args[i]);
  HETRT_ASSIGN_OR_RETURN(*result, vm.CallValue(args[1], std::move(call_args)));
  return OkStatus();
}

// call_tir_dyn(kernel, args..., shape): kernel(args..., shape[0], shape[1], ...)
Status CallTirDyn(RelaxInterpreter& vm, const RelaxCallArgs& args, RelaxValue* result) {
  HETRT_RETURN_IF_ERROR(NeedArgs(args, 2));
  if (!args[0].is(Kind::kFunction)) return WrongKind(0, "a function", args[0]);
  const uint32_t last = args.size() - 1;
  if (!args[last].is(Kind::kShape)) return WrongKind(last, "a shape", args[last]);
  const auto& callee = vm.callees[args[0].function()];
  if (callee.kind != RelaxInterpreter::Callee::Kind::kKernel)
    return InvalidArgument("call_tir_dyn of '" + vm.FunctionName(args[0].function()) + "', which is not a kernel");
  std::vector<RelaxValue> inner;
  for (uint32_t i = 1; i < last; ++i) inner.push_back(args[i]);
  return vm.CallKernel(*callee.kernel, RelaxCallArgs(inner.data(), static_cast<uint32_t>(inner.size())),
                       &args[last].shape(), result);
}

// to_device(x, device_type, device_id) -> a copy on that device
Status ToDevice(RelaxInterpreter& vm, const RelaxCallArgs& args, RelaxValue* result) {
  HETRT_RETURN_IF_ERROR(NeedArgs(args, 3));
  if (!args[0].is(Kind::kTensor)) return WrongKind(0, "a tensor", args[0]);
  HETRT_ASSIGN_OR_RETURN(int64_t type, IntArg(args, 1));
  HETRT_ASSIGN_OR_RETURN(int64_t id, IntArg(args, 2));
  const DLDevice target{static_cast<DLDeviceType>(type), static_cast<int32_t>(id)};
  const int index = vm.IndexOf(target);
  if (index < 0)
    return InvalidArgument("to_device " + DeviceToString(target) + ", which is not one of the VM's devices");
  // A constant moved to this device at creation (MoveConstantOnce): passed on,
  // as vm.builtin.copy passes a constant on.
  const DLDevice at = args[0].tensor().device();
  if (vm.IsMovedConstant(args.fixed(0)) && SameDevice(at, target)) {
    *result = args[0];
    return OkStatus();
  }
  HETRT_ASSIGN_OR_RETURN(Tensor copy, vm.CopyTo(args[0].tensor(), index, /*may_alias=*/true));
  *result = RelaxValue::FromTensor(std::move(copy));
  return OkStatus();
}

// memory_manager.clear(): gives the pools' kept blocks back.
Status ClearPools(RelaxInterpreter& vm, const RelaxCallArgs&, RelaxValue* result) {
  for (RelaxVmDevice& d : vm.devices)
    if (d.pool) d.pool->Release();
  *result = RelaxValue();
  return OkStatus();
}

using NamedBuiltin = NamedRelaxBuiltin;

constexpr std::array kBuiltins = {
    NamedBuiltin{"vm.builtin.alloc_storage", &AllocStorage},
    NamedBuiltin{"vm.builtin.alloc_tensor", &AllocTensor},
    NamedBuiltin{"vm.builtin.alloc_shape_heap", &AllocShapeHeap},
    NamedBuiltin{"vm.builtin.null_value", &NullValue},
    NamedBuiltin{"vm.builtin.copy", &Copy},
    NamedBuiltin{"vm.builtin.make_tuple", &MakeTuple},
    NamedBuiltin{"vm.builtin.tuple_getitem", &TupleGetItem},
    NamedBuiltin{"vm.builtin.shape_of", &ShapeOf},
    NamedBuiltin{"vm.builtin.check_tensor_info", &CheckTensorInfo},
    NamedBuiltin{"vm.builtin.check_shape_info", &CheckShapeInfo},
    NamedBuiltin{"vm.builtin.check_prim_value_info", &CheckPrimValueInfo},
    NamedBuiltin{"vm.builtin.check_tuple_info", &CheckTupleInfo},
    NamedBuiltin{"vm.builtin.check_func_info", &CheckFuncInfo},
    NamedBuiltin{"vm.builtin.match_shape", &MatchShape},
    NamedBuiltin{"vm.builtin.make_shape", &MakeShape},
    NamedBuiltin{"vm.builtin.match_prim_value", &MatchPrimValue},
    NamedBuiltin{"vm.builtin.make_prim_value", &MakePrimValue},
    NamedBuiltin{"vm.builtin.reshape", &Reshape},
    NamedBuiltin{"vm.builtin.tensor_to_shape", &TensorToShape},
    NamedBuiltin{"vm.builtin.read_if_cond", &ReadIfCond},
    NamedBuiltin{"vm.builtin.make_closure", &MakeClosure},
    NamedBuiltin{"vm.builtin.invoke_closure", &InvokeClosure},
    NamedBuiltin{"vm.builtin.call_tir_dyn", &CallTirDyn},
    NamedBuiltin{"vm.builtin.to_device", &ToDevice},
    NamedBuiltin{"vm.builtin.memory_manager.clear", &ClearPools},
};

// TVM builtins hetrt refuses, by name prefix, with the reason.
struct Refusal {
  std::string_view prefix;
  std::string_view why;
};
constexpr std::array kRefused = {
    Refusal{"vm.builtin.attention_kv_cache_create",
            "the legacy non-paged KV cache (nn.KVCache effects); hetrt runs the paged KV cache"},
    Refusal{"vm.builtin.attention_kv_cache_append", "the legacy non-paged KV cache (nn.KVCache effects)"},
    Refusal{"vm.builtin.attention_kv_cache_update", "the legacy non-paged KV cache (nn.KVCache effects)"},
    Refusal{"vm.builtin.attention_kv_cache_view", "the legacy non-paged KV cache (nn.KVCache effects)"},
    Refusal{"vm.builtin.attention_kv_cache_window_override", "the legacy non-paged KV cache (nn.KVCache effects)"},
    Refusal{"vm.builtin.attention_kv_cache_array_", "the legacy non-paged KV cache (nn.KVCache effects)"},
    Refusal{"vm.builtin.rnn_state", "RNN state (RWKV-style models), which hetrt does not run"},
    Refusal{"vm.builtin.hexagon", "Hexagon, which hetrt does not run"},
    Refusal{"vm.builtin.invoke_debug_func", "debug printing (R.print)"},
    Refusal{"vm.builtin.tuple_reset_item", "LiftTransformParams' tuple reset"},
    Refusal{"vm.builtin.ensure_zero_offset", "memory views (R.memory.view)"},
    Refusal{"runtime.TVMArrayCreateView", "memory views (R.memory.view)"},
    Refusal{"relax.run.", "relax.run.* operators (assert_op, shape_to_tensor, unique, nonzero)"},
};

}  // namespace

constexpr std::array kReusing = {
    ReusingRelaxBuiltin{&AllocTensor, &AllocTensorReusing},
    ReusingRelaxBuiltin{&Reshape, &ReshapeReusing},
    ReusingRelaxBuiltin{&MakeShape, &MakeShapeReusing},
};
std::span<const ReusingRelaxBuiltin> ReusingRelaxBuiltins() { return kReusing; }

std::span<const NamedRelaxBuiltin> CoreRelaxBuiltins() { return kBuiltins; }

RelaxBuiltin FindRelaxBuiltin(std::string_view name) {
  for (auto table : {CoreRelaxBuiltins(), KvCacheRelaxBuiltins(), TensorCacheRelaxBuiltins(), LmRelaxBuiltins(),
                     CudaGraphRelaxBuiltins()})
    for (const NamedRelaxBuiltin& b : table)
      if (b.name == name) return b.fn;
  return nullptr;
}

std::optional<std::string> RefusedRelaxBuiltin(std::string_view name) {
  for (const Refusal& r : kRefused)
    if (name.substr(0, r.prefix.size()) == r.prefix)
      return "the executable calls '" + std::string(name) + "': " + std::string(r.why);
  return std::nullopt;
}

}  // namespace hetrt
