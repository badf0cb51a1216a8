// Reading a builtin's arguments: each check names the argument and what it
// got, so a wrong kind or count is an error a user can act on, never a crash.
#pragma once

#include <string>

#include "relax/interpreter.h"

namespace hetrt {

// The errors below are built out of line (builtins.cc): the checks that pass,
// on every instruction, stay a compare and a branch.
[[gnu::cold]] Status WrongKind(uint32_t index, const char* what, const RelaxValue& got);
[[gnu::cold]] Status TooFewArgs(const RelaxCallArgs& args, uint32_t at_least);
[[gnu::cold]] Status MissingArg(uint32_t index);

inline Status NeedArgs(const RelaxCallArgs& args, uint32_t at_least) {
  if (args.size() < at_least) [[unlikely]]
    return TooFewArgs(args, at_least);
  return OkStatus();
}

[[gnu::always_inline]] inline Result<int64_t> IntArg(const RelaxCallArgs& args, uint32_t i) {
  if (i < args.size() && args[i].is(RelaxValue::Kind::kInt)) [[likely]]
    return args[i].int_value();
  return i >= args.size() ? MissingArg(i) : WrongKind(i, "an int", args[i]);
}

// An int or a float as a double (TVM's PrimValue arguments take either).
inline Result<double> RealArg(const RelaxCallArgs& args, uint32_t i) {
  if (i >= args.size()) return MissingArg(i);
  if (args[i].is(RelaxValue::Kind::kInt)) return static_cast<double>(args[i].int_value());
  if (!args[i].is(RelaxValue::Kind::kFloat)) return WrongKind(i, "a number", args[i]);
  return args[i].float_value();
}

inline Result<const std::string*> StringArg(const RelaxCallArgs& args, uint32_t i) {
  if (i >= args.size()) return MissingArg(i);
  if (!args[i].is(RelaxValue::Kind::kString)) return WrongKind(i, "a string", args[i]);
  return &args[i].string();
}

inline Result<const Tensor*> TensorArg(const RelaxCallArgs& args, uint32_t i) {
  if (i >= args.size()) return MissingArg(i);
  if (!args[i].is(RelaxValue::Kind::kTensor)) return WrongKind(i, "a tensor", args[i]);
  return &args[i].tensor();
}

}  // namespace hetrt
