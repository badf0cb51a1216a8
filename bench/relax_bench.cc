// The Relax VM's dispatch against its floor: relax_mlp called through the VM
// (pooled allocator, steady state) and the same kernels called directly in
// order on preallocated buffers, interleaved in one run; per-instruction
// overhead; a symbolic batch model whose batch grows and shrinks.
#include <cstring>
#include <map>

#include <benchmark/benchmark.h>

#include "hetrt/exec/relax_executor.h"
#include "hetrt/formats/params.h"
#include "hetrt/module/module_loader.h"
#include "interleaved.h"
#include "kernel_floor.h"

namespace hetrt {
namespace {

std::string RelaxFixture(const std::string& name) {
  const char* env = std::getenv("HETRT_FIXTURES");
  return std::string(env && *env ? env : HETRT_DEFAULT_FIXTURES_DIR) + "/tvm-0.18-relax/" + name;
}

struct OpenVm {
  std::unique_ptr<RelaxVirtualMachine> vm;
  uint32_t main = 0;
  std::vector<RelaxValue> args;
};

Result<OpenVm> Open(const std::string& name) {
  const std::string dir = RelaxFixture(name);
  HETRT_ASSIGN_OR_RETURN(auto root, LoadModuleFile(dir + "/deploy.so"));
  OpenVm o;
  HETRT_ASSIGN_OR_RETURN(o.vm, RelaxVirtualMachine::Create(root, {}));
  HETRT_ASSIGN_OR_RETURN(o.main, o.vm->FindFunction("main"));
  HETRT_ASSIGN_OR_RETURN(auto inputs, LoadParamDictFile(dir + "/" + (name == "relax_dyn_batch" ? "inputs_n5" : "inputs") + ".params"));
  for (const std::string& p : o.vm->ParamNames(o.main)) {
    const NamedTensor* t = FindParam(inputs, p);
    if (t == nullptr) return NotFound("input " + p);
    o.args.push_back(RelaxValue::FromTensor(t->tensor));
  }
  return o;
}

// The floor: the kernels one VM call makes (kernel_floor.h).
Result<KernelFloor> RecordFloor(OpenVm& o) {
  KernelFloor f;
  o.vm->SetKernelObserver(f.Observer());
  auto r = o.vm->Invoke(o.main, o.args);
  o.vm->SetKernelObserver(nullptr);
  if (!r.ok()) return r.status();
  HETRT_RETURN_IF_ERROR(f.status());
  return f;
}

void BM_RelaxMlp_Vm(benchmark::State& state) {
  auto o = Open("relax_mlp");
  if (!o.ok()) return state.SkipWithError(o.status().ToString().c_str());
  for (auto _ : state) benchmark::DoNotOptimize(o->vm->Invoke(o->main, o->args));
}
BENCHMARK(BM_RelaxMlp_Vm);

// relax_mlp and its floor, kept together: the floor calls the VM's kernels.
struct MlpAndFloor {
  OpenVm vm;
  KernelFloor floor;
};

Result<MlpAndFloor> OpenMlpAndFloor() {
  HETRT_ASSIGN_OR_RETURN(OpenVm o, Open("relax_mlp"));
  HETRT_ASSIGN_OR_RETURN(KernelFloor floor, RecordFloor(o));
  return MlpAndFloor{std::move(o), std::move(floor)};
}

void BM_RelaxMlp_DirectCallFloor(benchmark::State& state) {
  auto opened = OpenMlpAndFloor();
  if (!opened.ok()) return state.SkipWithError(opened.status().ToString().c_str());
  for (auto _ : state) opened->floor.Run();
}
BENCHMARK(BM_RelaxMlp_DirectCallFloor);

// Both interleaved in one run (TimeInterleaved); Arg(1): the VM replays the
// call (RelaxVirtualMachine::EnableReplay) instead of interpreting it.
void BM_RelaxMlp_RatioToFloor(benchmark::State& state) {
  auto opened = OpenMlpAndFloor();
  if (!opened.ok()) return state.SkipWithError(opened.status().ToString().c_str());
  OpenVm& o = opened->vm;
  KernelFloor& floor = opened->floor;
  if (state.range(0) != 0)
    if (Status s = o.vm->EnableReplay(o.main, 1); !s.ok()) return state.SkipWithError(s.ToString().c_str());
  const InterleavedNs ns = TimeInterleaved(
      state, /*reps=*/50, [&] { benchmark::DoNotOptimize(o.vm->Invoke(o.main, o.args)); }, [&] { floor.Run(); });
  const double instructions = static_cast<double>(o.vm->last_call_stats().instructions);
  state.counters["vm_us"] = ns.measured / 1000.0;
  state.counters["floor_us"] = ns.floor / 1000.0;
  state.counters["ratio"] = ns.measured / ns.floor;
  state.counters["instructions"] = instructions;
  state.counters["ns_per_instruction"] = (ns.measured - ns.floor) / instructions;
  state.counters["plugin_allocations"] = static_cast<double>(o.vm->PluginAllocations());
  state.counters["replayed"] = static_cast<double>(o.vm->ReplayStats(o.main).replayed);
}
BENCHMARK(BM_RelaxMlp_RatioToFloor)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// The VM's own cost per instruction: a function of builtins only, the ones
// every static model runs (checks, storage, tensors, kills, a tuple), so no
// kernel hides it. 10 instructions per call.
Result<OpenVm> BuiltinsOnly() {
  RelaxExecutable exe;
  auto packed = [&](const char* name) {
    RelaxFunction f;
    f.name = name;
    exe.functions.push_back(f);
    return static_cast<int64_t>(exe.functions.size() - 1);
  };
  auto constant = [&](RelaxConstant c) {
    exe.constants.push_back(std::move(c));
    return static_cast<int64_t>(exe.constants.size() - 1);
  };
  const int64_t check = packed("vm.builtin.check_tensor_info"), match = packed("vm.builtin.match_shape"),
                storage = packed("vm.builtin.alloc_storage"), tensor = packed("vm.builtin.alloc_tensor"),
                kill = packed("vm.builtin.null_value"), tuple = packed("vm.builtin.make_tuple");
  RelaxConstant c;
  c.type = RelaxConstant::Type::kDataType;
  c.dtype = {kDLFloat, 32, 1};
  const int64_t f32 = constant(c);
  c.type = RelaxConstant::Type::kShape;
  c.shape = {4096};
  const int64_t bytes = constant(c);
  c.shape = {16, 64};
  const int64_t shape = constant(c);
  c.type = RelaxConstant::Type::kString;
  c.string = "global";
  const int64_t global = constant(c);
  c.string = "ErrorContext(fn=main, loc=param[0], param=x)";
  const int64_t err = constant(c);
  using A = RelaxArg;
  const A reg0{A::Kind::kRegister, 0}, vm{A::Kind::kRegister, kRelaxVmRegister};
  auto imm = [](int64_t v) { return A{A::Kind::kImmediate, v}; };
  auto cst = [](int64_t v) { return A{A::Kind::kConstIdx, v}; };
  auto reg = [](int64_t v) { return A{A::Kind::kRegister, v}; };
  RelaxFunction main;
  main.kind = RelaxFunction::Kind::kVmFunc;
  main.name = "main";
  main.num_args = 1;
  main.param_names = {"x"};
  main.register_file_size = 6;
  main.start_instr = 0;
  auto call = [&](int64_t fn, int64_t dst, std::vector<A> args) {
    RelaxInstruction in{RelaxInstruction::Op::kCall, dst, fn, static_cast<uint32_t>(exe.args.size()),
                        static_cast<uint32_t>(args.size())};
    exe.args.insert(exe.args.end(), args.begin(), args.end());
    exe.instructions.push_back(in);
  };
  call(check, kRelaxVoidRegister, {reg0, imm(2), cst(f32), cst(err)});
  call(match, kRelaxVoidRegister, {reg0, A{A::Kind::kRegister, kRelaxVoidRegister}, imm(2), imm(0), imm(16), imm(0),
                                   imm(64), cst(err)});
  call(storage, 1, {vm, cst(bytes), imm(0), cst(f32), cst(global)});
  call(tensor, 2, {reg(1), imm(0), cst(shape), cst(f32)});
  call(storage, 3, {vm, cst(bytes), imm(0), cst(f32), cst(global)});
  call(tensor, 4, {reg(3), imm(0), cst(shape), cst(f32)});
  call(kill, 1, {});
  call(kill, 3, {});
  call(tuple, 5, {reg(2), reg(4)});
  exe.instructions.push_back({RelaxInstruction::Op::kRet, 5, 0, 0, 0});
  main.end_instr = static_cast<int64_t>(exe.instructions.size());
  exe.functions.push_back(main);
  HETRT_ASSIGN_OR_RETURN(auto image, WriteRelaxExecutable(exe));
  HETRT_ASSIGN_OR_RETURN(RelaxExecutable parsed, ParseRelaxExecutable(image, "builtins-only"));
  auto root = std::make_shared<RelaxExecutableModule>(std::make_shared<const RelaxExecutable>(std::move(parsed)),
                                                      std::move(image));
  OpenVm o;
  HETRT_ASSIGN_OR_RETURN(o.vm, RelaxVirtualMachine::Create(root, {}));
  HETRT_ASSIGN_OR_RETURN(o.main, o.vm->FindFunction("main"));
  HETRT_ASSIGN_OR_RETURN(Tensor x, Tensor::EmptyHost({16, 64}, {kDLFloat, 32, 1}));
  o.args.push_back(RelaxValue::FromTensor(std::move(x)));
  return o;
}

// Arg(1): replayed, so what is left is matching the call's signature and
// checking that no earlier result is held.
void BM_RelaxBuiltinsOnly(benchmark::State& state) {
  auto o = BuiltinsOnly();
  if (!o.ok()) return state.SkipWithError(o.status().ToString().c_str());
  if (state.range(0) != 0)
    if (Status s = o->vm->EnableReplay(o->main, 1); !s.ok()) return state.SkipWithError(s.ToString().c_str());
  for (auto _ : state) benchmark::DoNotOptimize(o->vm->Invoke(o->main, o->args));
  state.counters["instructions"] = static_cast<double>(o->vm->last_call_stats().instructions);
  state.counters["ns_per_instruction"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * static_cast<double>(o->vm->last_call_stats().instructions),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["replayed"] = static_cast<double>(o->vm->ReplayStats(o->main).replayed);
}
BENCHMARK(BM_RelaxBuiltinsOnly)->Arg(0)->Arg(1);

// A batch that changes every call (1..64 rows): after the first call at the
// largest size the pool serves every size; plugin_allocations says so.
void BM_RelaxDynBatch_VaryingRows(benchmark::State& state) {
  auto o = Open("relax_dyn_batch");
  if (!o.ok()) return state.SkipWithError(o.status().ToString().c_str());
  std::vector<std::vector<RelaxValue>> batches;
  for (int64_t rows : {1, 7, 64, 16, 3}) {
    auto x = Tensor::EmptyHost({rows, 784}, {kDLFloat, 32, 1});
    std::memset(x->data(), 0, x->nbytes());
    batches.push_back({RelaxValue::FromTensor(std::move(x).value())});
  }
  for (const auto& b : batches) (void)o->vm->Invoke(o->main, b);
  const uint64_t warm = o->vm->PluginAllocations();
  size_t i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(o->vm->Invoke(o->main, batches[i++ % batches.size()]));
  state.counters["plugin_allocations_after_warmup"] = static_cast<double>(o->vm->PluginAllocations() - warm);
}
BENCHMARK(BM_RelaxDynBatch_VaryingRows);

}  // namespace
}  // namespace hetrt

BENCHMARK_MAIN();
