// vm.builtin.cuda_graph.*, which libraries built with use_cuda_graph call
// around their static regions. hetrt runs them as the doc's fallback on every
// device (docs/llm.md): the region is invoked, not captured and replayed, and
// its one storage allocation is memoised per entry, so the states it returns
// alias the same memory on every call, as a replayed graph's would.
#include <array>

#include "relax/builtin_args.h"
#include "relax/interpreter.h"

namespace hetrt {
namespace {

using Kind = RelaxValue::Kind;

// get_cached_alloc(vm, alloc_func, entry_index) -> the first call's result, always
Status GetCachedAlloc(RelaxInterpreter& vm, const RelaxCallArgs& args, RelaxValue* result) {
  HETRT_RETURN_IF_ERROR(NeedArgs(args, 3));
  HETRT_ASSIGN_OR_RETURN(int64_t entry, IntArg(args, 2));
  if (auto it = vm.cached_allocs.find(entry); it != vm.cached_allocs.end()) {
    *result = it->second;
    return OkStatus();
  }
  HETRT_ASSIGN_OR_RETURN(RelaxValue allocated, vm.CallValue(args[1], {}), "the CUDA-graph allocation function");
  vm.cached_allocs.emplace(entry, allocated);
  *result = std::move(allocated);
  return OkStatus();
}

// run_or_capture(vm, capture_func, args: tuple, entry_index[, shape]) -> capture_func(*args)
Status RunOrCapture(RelaxInterpreter& vm, const RelaxCallArgs& args, RelaxValue* result) {
  HETRT_RETURN_IF_ERROR(NeedArgs(args, 4));
  if (!args[2].is(Kind::kTuple)) return WrongKind(2, "the region's arguments (a tuple)", args[2]);
  HETRT_RETURN_IF_ERROR(IntArg(args, 3).status());
  HETRT_ASSIGN_OR_RETURN(*result, vm.CallValue(args[1], args[2].tuple()), "a CUDA-graph region");
  return OkStatus();
}

constexpr std::array kCudaGraphBuiltins = {
    NamedRelaxBuiltin{"vm.builtin.cuda_graph.get_cached_alloc", &GetCachedAlloc},
    NamedRelaxBuiltin{"vm.builtin.cuda_graph.run_or_capture", &RunOrCapture},
};

}  // namespace

std::span<const NamedRelaxBuiltin> CudaGraphRelaxBuiltins() { return kCudaGraphBuiltins; }

}  // namespace hetrt
