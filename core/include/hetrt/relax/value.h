// What a Relax VM register holds and a Relax function takes and returns: null,
// an int, a float, a dtype, a tensor, a shape, a string, a storage block, a
// tuple, a function or closure, a stateful object (the paged KV cache), or
// the VM itself. Small (16 bytes + a shared
// object); copies share the object, as TVM's ObjectRefs do.
//
// Thread contract: a value may be copied and read from any thread; tensors in
// it are written only by the VM call that produced them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "hetrt/base/tensor.h"

namespace hetrt {

class RelaxValue;
using RelaxTuple = std::vector<RelaxValue>;

// State a builtin made and the bytecode passes around without looking inside
// (TVM's Object parameters: the paged KV cache). Only builtins that know the
// concrete type act on it.
class RelaxObject {
 public:
  virtual ~RelaxObject() = default;
  // TVM's type key ("relax.vm.PagedAttentionKVCache"), for messages and Python.
  virtual const char* type_key() const = 0;
};

// A function bound to values appended to its arguments (vm.builtin.make_closure).
struct RelaxClosure {
  uint32_t function = 0;  // index into the executable's function table
  std::vector<RelaxValue> captured;
};

class RelaxValue {
 public:
  enum class Kind : uint8_t {
    kNull,
    kInt,
    kFloat,
    kDataType,
    kTensor,
    kShape,
    kString,
    kStorage,  // a block from a VM allocator; alloc_tensor views into it
    kTuple,
    kFunction,  // an entry of the function table
    kClosure,
    kObject,  // a RelaxObject
    kVm,      // the %vm register: the VM context builtins receive
  };

  RelaxValue() : int_(0) {}
  static RelaxValue Int(int64_t v) { return RelaxValue(Kind::kInt, v); }
  static RelaxValue Float(double v) {
    RelaxValue r(Kind::kFloat, 0);
    r.float_ = v;
    return r;
  }
  static RelaxValue DataType(DLDataType t) {
    RelaxValue r(Kind::kDataType, 0);
    r.dtype_ = t;
    return r;
  }
  static RelaxValue Function(uint32_t index) { return RelaxValue(Kind::kFunction, index); }
  static RelaxValue Vm() { return RelaxValue(Kind::kVm, 0); }
  static RelaxValue FromTensor(Tensor t) { return Object(Kind::kTensor, std::make_shared<Tensor>(std::move(t))); }
  static RelaxValue Storage(Tensor block) { return Object(Kind::kStorage, std::make_shared<Tensor>(std::move(block))); }
  static RelaxValue Shape(std::vector<int64_t> dims) {
    return Object(Kind::kShape, std::make_shared<std::vector<int64_t>>(std::move(dims)));
  }
  static RelaxValue String(std::string s) { return Object(Kind::kString, std::make_shared<std::string>(std::move(s))); }
  static RelaxValue Tuple(RelaxTuple items) {
    return Object(Kind::kTuple, std::make_shared<RelaxTuple>(std::move(items)));
  }
  static RelaxValue Closure(RelaxClosure c) {
    return Object(Kind::kClosure, std::make_shared<RelaxClosure>(std::move(c)));
  }
  static RelaxValue FromObject(std::shared_ptr<RelaxObject> o) {
    return Object(Kind::kObject, std::shared_ptr<void>(o, static_cast<void*>(o.get())));
  }

  Kind kind() const { return kind_; }
  // How many values share this one's object (0 for plain values).
  long use_count() const { return object_.use_count(); }
  // Whether both share one object (copies of one value; false for plain values).
  bool SameObject(const RelaxValue& other) const { return object_ != nullptr && object_ == other.object_; }
  // The shared object's address (NULL for plain values): an identity while held.
  const void* object_address() const { return object_.get(); }
  bool is(Kind k) const { return kind_ == k; }
  bool is_null() const { return kind_ == Kind::kNull; }
  int64_t int_value() const { return int_; }
  double float_value() const { return float_; }
  DLDataType dtype() const { return dtype_; }
  uint32_t function() const { return static_cast<uint32_t>(int_); }
  // Valid only for the matching kind (callers check kind() first).
  Tensor& tensor() const { return *static_cast<Tensor*>(object_.get()); }  // kTensor and kStorage
  const std::vector<int64_t>& shape() const { return *static_cast<const std::vector<int64_t>*>(object_.get()); }
  // A shape to write in place: only for a value nothing else holds
  // (use_count() == 1), as copies share the object.
  std::vector<int64_t>& unshared_shape() { return *static_cast<std::vector<int64_t>*>(object_.get()); }
  const std::string& string() const { return *static_cast<const std::string*>(object_.get()); }
  const RelaxTuple& tuple() const { return *static_cast<const RelaxTuple*>(object_.get()); }
  const RelaxClosure& closure() const { return *static_cast<const RelaxClosure*>(object_.get()); }
  RelaxObject& object() const { return *static_cast<RelaxObject*>(object_.get()); }
  // The object as T, or NULL when this is no object or another type.
  template <typename T>
  T* object_as() const {
    return kind_ == Kind::kObject ? dynamic_cast<T*>(static_cast<RelaxObject*>(object_.get())) : nullptr;
  }

  // "tensor float32[1, 10] on opencl:0", "tuple of 2", "int 3", ...
  std::string Describe() const;
  static const char* KindName(Kind kind);

 private:
  RelaxValue(Kind kind, int64_t v) : kind_(kind), int_(v) {}
  static RelaxValue Object(Kind kind, std::shared_ptr<void> object) {
    RelaxValue r(kind, 0);
    r.object_ = std::move(object);
    return r;
  }

  Kind kind_ = Kind::kNull;
  union {
    int64_t int_;
    double float_;
    DLDataType dtype_;
  };
  std::shared_ptr<void> object_;
};

// The tensors of a (nested) result, depth-first: what `hetrt run` saves as
// output_0, output_1, ... A non-tensor leaf is an error naming its path.
Result<std::vector<Tensor>> FlattenRelaxTensors(const RelaxValue& value);

}  // namespace hetrt
