// The Relax VM on TVM v0.18's relax.build executables (../shared/fixtures/
// tvm-0.18-relax): every fixture on the devices its meta.json names, against
// its expected outputs; symbolic batches the fixtures were not made with; the
// pooled allocator's steady state; and bytecode the fixtures do not cover
// (control flow, closures, tuples, nested calls, shape checks) on hand-made
// executables.
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "hetrt/base/dtype.h"
#include "hetrt/exec/graph_model.h"
#include "hetrt/exec/relax_executor.h"
#include "hetrt/formats/params.h"
#include "hetrt/module/module_loader.h"
#include "kernel_set.h"
#include "relax_test_support.h"
#include "two_branch_model.h"
#include "test_support.h"

namespace hetrt::testing {
namespace {

using Kind = RelaxValue::Kind;

std::vector<FixtureParam> RelaxFixtureParams() { return FixtureParams(RelaxFixtureNames(), "Relax fixtures"); }

using RelaxFixture = PerFixtureTest;

// The devices meta.json's vm_initialization names, in order.
std::vector<DLDevice> MetaDevices(const nlohmann::json& meta) {
  std::vector<DLDevice> devices;
  for (const auto& d : meta["vm_initialization"]["devices"])
    devices.push_back({static_cast<DLDeviceType>(d["device_type"].get<int>()), d["device_id"].get<int>()});
  return devices;
}

// The fixture's model on its meta.json devices, its executor in `*ex`; the
// caller returns when the test was skipped or failed here.
void OpenOnItsDevices(const std::string& dir, const nlohmann::json& meta, Model* model, RelaxExecutor** ex) {
  GraphExecutor::Options options;
  options.devices = MetaDevices(meta);
  for (const DLDevice& d : options.devices) HETRT_REQUIRE_DEVICE_OR_RETURN(d);
  HETRT_ASSERT_OK_AND_ASSIGN(*model, OpenModel({dir + "/deploy.so"}, options));
  *ex = dynamic_cast<RelaxExecutor*>(model->executor.get());
  ASSERT_NE(*ex, nullptr);
}

// Binds case `c`'s inputs, and the weights file of a weights-as-parameters model.
void BindCaseInputs(RelaxExecutor& ex, const std::string& dir, const nlohmann::json& meta, const nlohmann::json& c) {
  std::vector<std::string> files = {dir + "/" + c["inputs_file"].get<std::string>()};
  if (meta["weights"]["kind"] == "parameters") files.push_back(dir + "/" + meta["weights"]["file"].get<std::string>());
  for (const std::string& file : files) {
    HETRT_ASSERT_OK_AND_ASSIGN(auto inputs, LoadParamDictFile(file));
    for (const NamedTensor& p : inputs) HETRT_ASSERT_OK(ex.SetInput(p.name, p.tensor));
  }
}

// Opens the fixture on its meta.json devices, binds each case's inputs (and
// the weights file of a weights-as-parameters model), runs, and compares.
TEST_P(RelaxFixture, MatchesExpectedOutputsOnItsDevices) {
  const std::string dir = RelaxFixtureDir(fixture());
  const nlohmann::json meta = ReadRelaxMeta(dir);
  Model model;
  RelaxExecutor* ex = nullptr;
  OpenOnItsDevices(dir, meta, &model, &ex);
  if (IsSkipped() || HasFatalFailure()) return;
  EXPECT_EQ(ex->function_name(), meta["entry_function"].get<std::string>());
  ASSERT_EQ(ex->NumInputs(), static_cast<int>(meta["function_params"].size()));
  for (int i = 0; i < ex->NumInputs(); ++i) EXPECT_EQ(ex->InputName(i), meta["function_params"][i].get<std::string>());
  for (const auto& c : meta["cases"]) {
    SCOPED_TRACE("case " + c["name"].get<std::string>());
    BindCaseInputs(*ex, dir, meta, c);
    if (HasFatalFailure()) return;
    HETRT_ASSERT_OK_AND_ASSIGN(auto expected, LoadParamDictFile(dir + "/" + c["outputs_file"].get<std::string>()));
    // Three runs: interpreted, recorded, replayed (when the function can be).
    for (int run = 0; run < 3; ++run) {
      SCOPED_TRACE("run " + std::to_string(run));
      HETRT_ASSERT_OK(ex->Run());
      ASSERT_EQ(ex->NumOutputs(), static_cast<int>(expected.size()));
      for (size_t o = 0; o < expected.size(); ++o) {
        HETRT_ASSERT_OK_AND_ASSIGN(Tensor got, ex->GetOutput(static_cast<int>(o)));
        ExpectClose(got, FindParam(expected, "output_" + std::to_string(o))->tensor, "output_" + std::to_string(o));
      }
    }
    // Inputs sit on the devices meta.json says their kernels read them on.
    for (const auto& in : c["inputs"])
      if (in.contains("device_index")) {
        const int index = ex->InputIndex(in["name"].get<std::string>());
        ASSERT_GE(index, 0);
        EXPECT_EQ(ex->signature().params[static_cast<size_t>(index)].device_index, in["device_index"].get<int>())
            << in["name"];
      }
  }
}

// Which fixtures' entry functions replay (straight-line ones), and that
// their replayed runs matched above; the others say why they do not.
TEST_P(RelaxFixture, RepeatedRunsAreReplayedWhereTheFunctionAllows) {
  const std::string dir = RelaxFixtureDir(fixture());
  const nlohmann::json meta = ReadRelaxMeta(dir);
  Model model;
  RelaxExecutor* ex = nullptr;
  OpenOnItsDevices(dir, meta, &model, &ex);
  if (IsSkipped() || HasFatalFailure()) return;
  BindCaseInputs(*ex, dir, meta, meta["cases"][0]);
  if (HasFatalFailure()) return;
  for (int run = 0; run < 4; ++run) HETRT_ASSERT_OK(ex->Run());
  HETRT_ASSERT_OK_AND_ASSIGN(uint32_t f, ex->vm().FindFunction(ex->function_name()));
  const RelaxReplayStats stats = ex->vm().ReplayStats(f);
  if (stats.disabled.empty()) {
    EXPECT_EQ(stats.recorded, 1u);
    EXPECT_EQ(stats.replayed, 2u);
  } else {
    // The executor turned replay on; the function itself is why it is off.
    EXPECT_EQ(stats.disabled.find("not enabled"), std::string::npos) << stats.disabled;
    EXPECT_EQ(stats.replayed, 0u);
    std::cout << fixture() << " is interpreted: " << stats.disabled << "\n";
  }
}

// The same through `hetrt run --save-outputs`, every case, on the devices meta.json names.
TEST_P(RelaxFixture, MatchesThroughTheCli) {
  const std::string dir = RelaxFixtureDir(fixture());
  const nlohmann::json meta = ReadRelaxMeta(dir);
  std::string flags;
  for (const auto& d : meta["vm_initialization"]["devices"]) {
    const DLDevice device{static_cast<DLDeviceType>(d["device_type"].get<int>()), d["device_id"].get<int>()};
    HETRT_REQUIRE_DEVICE_OR_RETURN(device);
    flags += " --device " + DeviceToString(device);
  }
  if (meta["weights"]["kind"] == "parameters") flags += " --inputs " + dir + "/" + meta["weights"]["file"].get<std::string>();
  for (const auto& c : meta["cases"]) {
    SCOPED_TRACE("case " + c["name"].get<std::string>());
    const std::string saved = ::testing::TempDir() + "/relax_cli_" + std::to_string(getpid()) + ".params";
    const std::string log = saved + ".log";
    const std::string cmd = std::string(HETRT_CLI) + " run " + dir + "/deploy.so" + flags + " --inputs " + dir + "/" +
                            c["inputs_file"].get<std::string>() + " --save-outputs " + saved + " > " + log + " 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd << "\n" << ReadText(log);
    HETRT_ASSERT_OK_AND_ASSIGN(auto got, LoadParamDictFile(saved));
    HETRT_ASSERT_OK_AND_ASSIGN(auto want, LoadParamDictFile(dir + "/" + c["outputs_file"].get<std::string>()));
    ASSERT_EQ(got.size(), want.size());
    for (const NamedTensor& w : want) ExpectClose(FindParam(got, w.name)->tensor, w.tensor, w.name);
    std::remove(saved.c_str());
    std::remove(log.c_str());
  }
}

// The specs the server shows: -1 where the bytecode binds a symbolic dimension.
TEST_P(RelaxFixture, InputSpecsComeFromTheBytecodesChecks) {
  const std::string dir = RelaxFixtureDir(fixture());
  const nlohmann::json meta = ReadRelaxMeta(dir);
  HETRT_ASSERT_OK_AND_ASSIGN(auto root, LoadModuleFile(dir + "/deploy.so", {.keep_unloadable = true}));
  auto* module = dynamic_cast<RelaxExecutableModule*>(root.get());
  ASSERT_NE(module, nullptr);
  const int64_t main = module->executable()->FindFunction(meta["entry_function"].get<std::string>());
  ASSERT_GE(main, 0);
  const RelaxSignature sig = AnalyzeRelaxFunction(*module->executable(), static_cast<uint32_t>(main), {});
  for (const auto& in : meta["inputs"]) {
    auto it = std::find_if(sig.params.begin(), sig.params.end(), [&](const RelaxParamInfo& p) { return p.name == in["name"]; });
    ASSERT_NE(it, sig.params.end()) << in["name"];
    EXPECT_EQ(DataTypeToString(it->spec.dtype), in["dtype"].get<std::string>());
    ASSERT_EQ(it->spec.shape.size(), in["shape"].size());
    for (size_t d = 0; d < it->spec.shape.size(); ++d) {
      if (!in["shape"][d].is_number()) continue;  // a symbolic dim is named, e.g. "n"
      EXPECT_TRUE(it->spec.shape[d] == in["shape"][d].get<int64_t>() || it->spec.shape[d] == -1);
    }
  }
  ASSERT_TRUE(sig.outputs_known);
  ASSERT_EQ(sig.outputs.size(), meta["outputs"].size());
}

HETRT_INSTANTIATE_PER_FIXTURE(Relax, RelaxFixture, RelaxFixtureParams());

// A batch size the fixture was not generated with: the first 3 rows of the
// n=5 case give the first 3 rows of its expected output.
TEST(RelaxDynamicBatch, RunsABatchSizeItWasNotMadeWith) {
  const std::string dir = RelaxFixtureDir("relax_dyn_batch");
  if (dir.empty()) HETRT_MISSING("fixtures", "relax_dyn_batch not found under " << FixturesRoot());
  HETRT_ASSERT_OK_AND_ASSIGN(Model model, OpenModel({dir + "/deploy.so"}, {}));
  auto& ex = *model.executor;
  EXPECT_EQ(ex.InputSpec(0).shape, (std::vector<int64_t>{-1, 784}));
  EXPECT_EQ(ex.OutputSpec(0).shape, (std::vector<int64_t>{-1, 10}));
  HETRT_ASSERT_OK_AND_ASSIGN(auto in5, LoadParamDictFile(dir + "/inputs_n5.params"));
  HETRT_ASSERT_OK_AND_ASSIGN(auto out5, LoadParamDictFile(dir + "/outputs_n5.params"));
  const Tensor& x5 = in5[0].tensor;
  for (int64_t rows : {3, 1, 5, 2}) {
    SCOPED_TRACE("rows " + std::to_string(rows));
    HETRT_ASSERT_OK_AND_ASSIGN(Tensor x, x5.View({rows, 784}, x5.dtype()));
    HETRT_ASSERT_OK(ex.SetInput(0, x));
    HETRT_ASSERT_OK(ex.Run());
    HETRT_ASSERT_OK_AND_ASSIGN(Tensor y, ex.GetOutput(0));
    ASSERT_EQ(y.shape(), (std::vector<int64_t>{rows, 10}));
    HETRT_ASSERT_OK_AND_ASSIGN(Tensor want, out5[0].tensor.View({rows, 10}, out5[0].tensor.dtype()));
    ExpectClose(y, want, "output_0");
  }
}

// After the first call with a set of shapes, calls take nothing from the
// plugin; a larger symbolic dimension grows the pool once.
TEST(RelaxPool, SteadyStateAllocatesNothingFromThePlugin) {
  const std::string dir = RelaxFixtureDir("relax_dyn_batch");
  if (dir.empty()) HETRT_MISSING("fixtures", "relax_dyn_batch not found under " << FixturesRoot());
  HETRT_ASSERT_OK_AND_ASSIGN(auto root, LoadModuleFile(dir + "/deploy.so"));
  HETRT_ASSERT_OK_AND_ASSIGN(auto vm, RelaxVirtualMachine::Create(root, {}));
  HETRT_ASSERT_OK_AND_ASSIGN(Device cpu, PluginRegistry::Global().DeviceFor({kDLCPU, 0}));
  auto call = [&](int64_t rows) {
    Tensor x = Random({rows, 784}, 7);
    std::vector<RelaxValue> args = {RelaxValue::FromTensor(x)};
    auto r = vm->Invoke("main", args);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
  };
  call(4);
  const uint64_t after_first = vm->PluginAllocations();
  HETRT_ASSERT_OK_AND_ASSIGN(DeviceMemoryStats stats_first, cpu.MemoryStats());
  for (int i = 0; i < 5; ++i) call(4);
  EXPECT_EQ(vm->PluginAllocations(), after_first);
  HETRT_ASSERT_OK_AND_ASSIGN(DeviceMemoryStats stats_again, cpu.MemoryStats());
  EXPECT_EQ(stats_again.num_allocations, stats_first.num_allocations);
  call(64);  // every intermediate is larger: new blocks, once
  const uint64_t after_growth = vm->PluginAllocations();
  EXPECT_GT(after_growth, after_first);
  for (int i = 0; i < 3; ++i) call(64);
  call(4);  // the smaller blocks are still pooled
  EXPECT_EQ(vm->PluginAllocations(), after_growth);
  vm->ReleasePools();
  HETRT_ASSERT_OK_AND_ASSIGN(DeviceMemoryStats stats_released, cpu.MemoryStats());
  EXPECT_LT(stats_released.num_allocations, stats_again.num_allocations + (after_growth - after_first));
}

// Bad inputs through the executor: a clear error, and the model keeps working.
TEST(RelaxErrors, WrongInputsAreRefusedWithTheParameterName) {
  const std::string dir = RelaxFixtureDir("relax_mlp");
  if (dir.empty()) HETRT_MISSING("fixtures", "relax_mlp not found under " << FixturesRoot());
  HETRT_ASSERT_OK_AND_ASSIGN(Model model, OpenModel({dir + "/deploy.so"}, {}));
  auto& ex = *model.executor;
  EXPECT_FALSE(ex.Run().ok());  // nothing set yet
  Status s = ex.SetInput(0, Random({1, 783}, 1));
  EXPECT_NE(s.message().find("'data'"), std::string::npos) << s.message();
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor ints, Tensor::EmptyHost({1, 784}, {kDLInt, 32, 1}));
  s = ex.SetInput(0, ints);
  EXPECT_NE(s.message().find("int32"), std::string::npos) << s.message();
  s = ex.SetInput(0, Random({784}, 1));
  EXPECT_NE(s.message().find("rank"), std::string::npos) << s.message();
  EXPECT_EQ(ex.SetInput("weights", Random({1, 784}, 1)).code(), StatusCode::kNotFound);
  HETRT_ASSERT_OK(ex.SetInput(0, Random({1, 784}, 1)));
  HETRT_ASSERT_OK(ex.Run());
  // The VM's own checks, called directly with a wrong tensor.
  auto* relax = dynamic_cast<RelaxExecutor*>(&ex);
  std::vector<RelaxValue> bad = {RelaxValue::FromTensor(Random({2, 784}, 1))};
  auto r = relax->vm().Invoke("main", bad);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("ErrorContext"), std::string::npos) << r.status().message();
  std::vector<RelaxValue> none;
  r = relax->vm().Invoke("main", none);
  EXPECT_NE(r.status().message().find("takes 1 argument(s) (data), got 0"), std::string::npos)
      << r.status().message();
}

// ---- hand-made executables: bytecode the fixtures do not exercise

TEST(RelaxBytecode, IfGotoClosuresTuplesAndNestedCalls) {
  RelaxProgram p;
  const auto [read_if, copy, make_tuple, getitem, make_closure, invoke_closure] =
      p.Builtins("read_if_cond", "copy", "make_tuple", "tuple_getitem", "make_closure", "invoke_closure");
  // pick(a, b) = (b, a): a VM function called through a closure capturing b.
  const uint32_t pick = p.Function("pick", {"a", "b"}, 3);
  p.Call(make_tuple, 2, {p.Reg(1), p.Reg(0)});
  p.Ret(2);
  p.End();
  // main(c, x, y): if c: r = invoke(closure(pick, y), x)[0] else r = copy(y); return (r, c)
  p.Function("main", {"c", "x", "y"}, 7);
  p.Call(read_if, 3, {p.Reg(0)});
  p.If(3, 5);
  p.Call(make_closure, 4, {p.Func(pick), p.Reg(2)});
  p.Call(invoke_closure, 5, {p.Reg(kRelaxVmRegister), p.Reg(4), p.Reg(1)});
  p.Call(getitem, 6, {p.Reg(5), p.Imm(1)});
  p.Goto(2);
  p.Call(copy, 6, {p.Reg(2)});
  p.Call(make_tuple, 3, {p.Reg(6), p.Reg(0)});
  p.Ret(3);
  p.End();
  HETRT_ASSERT_OK_AND_ASSIGN(auto vm, p.Build());
  Tensor x = Random({2}, 1), y = Random({3}, 2);
  for (int64_t c : {1, 0}) {
    std::vector<RelaxValue> args = {RelaxValue::Int(c), RelaxValue::FromTensor(x), RelaxValue::FromTensor(y)};
    HETRT_ASSERT_OK_AND_ASSIGN(RelaxValue r, vm->Invoke("main", args));
    ASSERT_TRUE(r.is(Kind::kTuple));
    ASSERT_EQ(r.tuple().size(), 2u);
    // pick(x, y) = (y, x): item 1 is x; the false branch returns y.
    EXPECT_EQ(r.tuple()[0].tensor().data(), (c ? x : y).data());
    EXPECT_EQ(r.tuple()[1].int_value(), c);
    HETRT_ASSERT_OK_AND_ASSIGN(auto flat, FlattenRelaxTensors(r.tuple()[0]));
    EXPECT_EQ(flat.size(), 1u);
  }
  EXPECT_GT(vm->last_call_stats().instructions, 0u);
}

TEST(RelaxBytecode, ShapeHeapBindsSymbolicDimsAndRefusesConflicts) {
  RelaxProgram p;
  const auto [heap, match, make_shape, storage, tensor] =
      p.Builtins("alloc_shape_heap", "match_shape", "make_shape", "alloc_storage", "alloc_tensor");
  const uint32_t err = p.String("ErrorContext(fn=main, param=x)");
  const uint32_t global = p.String("global");
  const uint32_t f32 = p.DType({kDLFloat, 32, 1});
  const uint32_t u8 = p.DType({kDLUInt, 8, 1});
  // main(x, y): n = x.shape[0] = y.shape[1]; return empty float32 [n, 2] (8n bytes: shape [n*8] via heap slot 1)
  p.Function("main", {"x", "y"}, 7);
  p.Call(heap, 2, {p.Reg(kRelaxVmRegister), p.Imm(2)});
  p.Call(match, kRelaxVoidRegister, {p.Reg(0), p.Reg(2), p.Imm(1), p.Imm(1), p.Imm(0), p.Const(err)});
  p.Call(match, kRelaxVoidRegister,
         {p.Reg(1), p.Reg(2), p.Imm(2), p.Imm(0), p.Imm(4), p.Imm(3), p.Imm(0), p.Const(err)});
  p.Call(make_shape, 3, {p.Reg(2), p.Imm(1), p.Imm(0), p.Imm(4096)});
  p.Call(storage, 4, {p.Reg(kRelaxVmRegister), p.Reg(3), p.Imm(0), p.Const(u8), p.Const(global)});
  p.Call(make_shape, 5, {p.Reg(2), p.Imm(2), p.Imm(1), p.Imm(0), p.Imm(0), p.Imm(2)});
  p.Call(tensor, 6, {p.Reg(4), p.Imm(0), p.Reg(5), p.Const(f32)});
  p.Ret(6);
  p.End();
  HETRT_ASSERT_OK_AND_ASSIGN(auto vm, p.Build());
  auto run = [&](int64_t n, int64_t m) {
    std::vector<RelaxValue> args = {RelaxValue::FromTensor(Random({n}, 1)), RelaxValue::FromTensor(Random({4, m}, 2))};
    return vm->Invoke("main", args);
  };
  HETRT_ASSERT_OK_AND_ASSIGN(RelaxValue r, run(7, 7));
  EXPECT_EQ(r.tensor().shape(), (std::vector<int64_t>{7, 2}));
  auto bad = run(7, 6);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("ErrorContext(fn=main, param=x)"), std::string::npos);
  EXPECT_NE(bad.status().message().find("the same symbolic dimension"), std::string::npos) << bad.status().message();
  // Too big a view for its storage is refused, not written past.
  RelaxProgram q;
  const auto [storage2, tensor2] = q.Builtins("alloc_storage", "alloc_tensor");
  const uint32_t size = q.Shape({16});
  const uint32_t big = q.Shape({5});
  const uint32_t f32b = q.DType({kDLFloat, 32, 1});
  q.Function("main", {}, 2);
  q.Call(storage2, 0, {q.Reg(kRelaxVmRegister), q.Const(size), q.Imm(0), q.Const(f32b), q.Const(q.String("global"))});
  q.Call(tensor2, 1, {q.Reg(0), q.Imm(0), q.Const(big), q.Const(f32b)});
  q.Ret(1);
  q.End();
  HETRT_ASSERT_OK_AND_ASSIGN(auto vm2, q.Build());
  auto over = vm2->Invoke("main", {});
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.status().message().find("needs 20 bytes but the storage has 16"), std::string::npos)
      << over.status().message();
  // A device index the VM does not have.
  RelaxProgram d;
  const uint32_t storage3 = d.Packed("vm.builtin.alloc_storage");
  d.Function("main", {}, 1);
  d.Call(storage3, 0, {d.Reg(kRelaxVmRegister), d.Const(d.Shape({16})), d.Imm(3), d.Const(d.DType({kDLUInt, 8, 1})),
                       d.Const(d.String("global"))});
  d.Ret(0);
  d.End();
  HETRT_ASSERT_OK_AND_ASSIGN(auto vm3, d.Build());
  auto wrong_device = vm3->Invoke("main", {});
  ASSERT_FALSE(wrong_device.ok());
  EXPECT_NE(wrong_device.status().message().find("device index 3"), std::string::npos);
}

// make_shape, reshape and alloc_tensor rewrite the object their instruction
// made last time in place, but only when nothing else holds it: what a caller
// keeps from one call is never changed by the next.
TEST(RelaxBytecode, ShapesAndViewsACallerKeepsAreNotRewrittenByTheNextCall) {
  RelaxProgram p;
  const auto [heap, match, make_shape, reshape, tuple] =
      p.Builtins("alloc_shape_heap", "match_shape", "make_shape", "reshape", "make_tuple");
  const uint32_t err = p.String("ErrorContext(fn=main, param=x)");
  // main(x: [n]) -> (shape [n, 1], x viewed as [n, 1])
  p.Function("main", {"x"}, 5);
  p.Call(heap, 1, {p.Reg(kRelaxVmRegister), p.Imm(1)});
  p.Call(match, kRelaxVoidRegister, {p.Reg(0), p.Reg(1), p.Imm(1), p.Imm(1), p.Imm(0), p.Const(err)});
  p.Call(make_shape, 2, {p.Reg(1), p.Imm(2), p.Imm(1), p.Imm(0), p.Imm(0), p.Imm(1)});
  p.Call(reshape, 3, {p.Reg(0), p.Reg(2)});
  p.Call(tuple, 4, {p.Reg(2), p.Reg(3)});
  p.Ret(4);
  p.End();
  HETRT_ASSERT_OK_AND_ASSIGN(auto vm, p.Build());
  auto run = [&](const Tensor& x) {
    const RelaxValue args[] = {RelaxValue::FromTensor(x)};
    return vm->Invoke("main", args);
  };
  const Tensor x3 = Random({3}, 1), x5 = Random({5}, 2);
  HETRT_ASSERT_OK_AND_ASSIGN(RelaxValue kept, run(x3));
  HETRT_ASSERT_OK_AND_ASSIGN(RelaxValue next, run(x5));
  EXPECT_EQ(kept.tuple()[0].shape(), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(kept.tuple()[1].tensor().shape(), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(kept.tuple()[1].tensor().data(), x3.data());
  EXPECT_EQ(next.tuple()[0].shape(), (std::vector<int64_t>{5, 1}));
  EXPECT_EQ(next.tuple()[1].tensor().data(), x5.data());
  // Results dropped between calls: the instructions' own objects, rewritten.
  next = RelaxValue();
  for (const Tensor& x : {x5, x3, Random({4}, 3), x5}) {
    HETRT_ASSERT_OK_AND_ASSIGN(RelaxValue r, run(x));
    EXPECT_EQ(r.tuple()[0].shape(), (std::vector<int64_t>{x.shape()[0], 1}));
    EXPECT_EQ(r.tuple()[1].tensor().shape(), (std::vector<int64_t>{x.shape()[0], 1}));
    EXPECT_EQ(r.tuple()[1].tensor().data(), x.data());
  }
  EXPECT_EQ(kept.tuple()[0].shape(), (std::vector<int64_t>{3, 1})) << "still the first call's";
  // A bad shape code fails the call; the next good call is whole again.
  RelaxProgram q;
  const auto [heap2, make_shape2] = q.Builtins("alloc_shape_heap", "make_shape");
  q.Function("main", {"code"}, 3);
  q.Call(heap2, 1, {q.Reg(kRelaxVmRegister), q.Imm(1)});
  q.Call(make_shape2, 2, {q.Reg(1), q.Imm(2), q.Imm(0), q.Imm(7), q.Reg(0), q.Imm(8)});
  q.Ret(2);
  q.End();
  HETRT_ASSERT_OK_AND_ASSIGN(auto vm2, q.Build());
  for (int64_t code : {0, 9, 0}) {
    const RelaxValue args[] = {RelaxValue::Int(code)};
    auto r = vm2->Invoke("main", args);
    if (code == 9) {
      ASSERT_FALSE(r.ok());
      EXPECT_NE(r.status().message().find("make_shape: unknown code 9"), std::string::npos) << r.status().message();
      continue;
    }
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->shape(), (std::vector<int64_t>{7, 8}));
  }
}

// On a device that shares host memory (PoCL), a tensor read back on the host
// is the device's own bytes (no copy): two to_device of one tensor alias.
TEST(RelaxBytecode, ToDeviceFromHostVisibleMemoryIsAView) {
  HETRT_REQUIRE_DEVICE_OR_RETURN((DLDevice{kDLOpenCL, 0}));
  HETRT_ASSERT_OK_AND_ASSIGN(Device cl, PluginRegistry::Global().DeviceFor({kDLOpenCL, 0}));
  if (!cl.SharesHostMemory()) GTEST_SKIP() << "opencl:0 does not share host memory";
  RelaxProgram p;
  const auto [storage, tensor, to_device, tuple] = p.Builtins("alloc_storage", "alloc_tensor", "to_device", "make_tuple");
  const uint32_t f32 = p.DType({kDLFloat, 32, 1});
  p.Function("main", {}, 5);
  p.Call(storage, 0, {p.Reg(kRelaxVmRegister), p.Const(p.Shape({64})), p.Imm(0), p.Const(f32), p.Const(p.String("global"))});
  p.Call(tensor, 1, {p.Reg(0), p.Imm(0), p.Const(p.Shape({16})), p.Const(f32)});
  p.Call(to_device, 2, {p.Reg(1), p.Imm(kDLCPU), p.Imm(0)});
  p.Call(to_device, 3, {p.Reg(1), p.Imm(kDLCPU), p.Imm(0)});
  p.Call(tuple, 4, {p.Reg(2), p.Reg(3)});
  p.Ret(4);
  p.End();
  RelaxVirtualMachine::Options options;
  options.devices = {{kDLOpenCL, 0}, {kDLCPU, 0}};
  HETRT_ASSERT_OK_AND_ASSIGN(auto vm, p.Build(options));
  HETRT_ASSERT_OK_AND_ASSIGN(RelaxValue r, vm->Invoke("main", {}));
  const Tensor& a = r.tuple()[0].tensor();
  const Tensor& b = r.tuple()[1].tensor();
  EXPECT_EQ(a.device().device_type, kDLCPU);
  EXPECT_EQ(a.data(), b.data()) << "each to_device copied instead of viewing the host-visible bytes";
  static_cast<float*>(a.data())[3] = 7.f;  // the host may read and write them
  EXPECT_EQ(static_cast<float*>(b.data())[3], 7.f);
}

// A mixed-device model's weights for its other devices: to_device of a
// constant is copied once, at creation, not on every call (TVM's bytecode
// moves them with to_device each call); a register's tensor is still copied.
TEST(RelaxBytecode, ToDeviceOfAConstantCopiesItOnceAtCreation) {
  HETRT_REQUIRE_DEVICE_OR_RETURN((DLDevice{kDLOpenCL, 0}));
  RelaxProgram p;
  const auto [to_device, tuple] = p.Builtins("to_device", "make_tuple");
  RelaxConstant weights;
  weights.type = RelaxConstant::Type::kTensor;
  weights.tensor = Tensor::EmptyHost({4}, DLDataType{kDLFloat, 32, 1}).value();
  for (int i = 0; i < 4; ++i) weights.tensor.data_as<float>()[i] = 1.5f * i;
  const uint32_t c = p.AddConstant(weights);
  p.Function("main", {"x"}, 5);
  p.Call(to_device, 1, {p.Const(c), p.Imm(kDLOpenCL), p.Imm(0)});
  p.Call(to_device, 2, {p.Const(c), p.Imm(kDLOpenCL), p.Imm(0)});
  p.Call(to_device, 3, {p.Reg(0), p.Imm(kDLOpenCL), p.Imm(0)});
  p.Call(tuple, 4, {p.Reg(1), p.Reg(2), p.Reg(3)});
  p.Ret(4);
  p.End();
  RelaxVirtualMachine::Options options;
  options.devices = {{kDLCPU, 0}, {kDLOpenCL, 0}};  // constants live on the CPU
  HETRT_ASSERT_OK_AND_ASSIGN(auto vm, p.Build(options));
  const uint64_t allocations = vm->PluginAllocations();
  const std::vector<RelaxValue> args{RelaxValue::FromTensor(weights.tensor)};
  std::vector<const void*> seen;
  for (int call = 0; call < 2; ++call) {
    HETRT_ASSERT_OK_AND_ASSIGN(RelaxValue r, vm->Invoke("main", args));
    HETRT_ASSERT_OK(vm->Synchronize());
    const RelaxTuple& t = r.tuple();
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(t[i].tensor().device().device_type, kDLOpenCL);
      HETRT_ASSERT_OK_AND_ASSIGN(Tensor back, PluginRegistry::Global().ToHost(t[i].tensor()));
      EXPECT_EQ(std::memcmp(back.data(), weights.tensor.data(), 16), 0) << "item " << i;
    }
    EXPECT_EQ(t[0].tensor().data(), t[1].tensor().data()) << "one copy per constant and device";
    EXPECT_NE(t[2].tensor().data(), t[0].tensor().data()) << "a register's tensor is copied";
    seen.push_back(t[0].tensor().data());
  }
  EXPECT_EQ(seen[0], seen[1]) << "the constant was copied again on the second call";
  EXPECT_EQ(vm->PluginAllocations(), allocations + 1) << "the register's copy, from the pool, once";
}

TEST(RelaxBytecode, RefusedAndMissingFunctionsFailAtCreationNamingThem) {
  auto calling = [](const char* name) {  // main() { return name(); }
    RelaxProgram p;
    p.Packed(name);
    p.Function("main", {}, 1);
    p.Call(0, 0, {});
    p.Ret(0);
    p.End();
    return p.Build();
  };
  for (const char* name :
       {"vm.builtin.attention_kv_cache_create", "vm.builtin.rnn_state_create", "vm.builtin.invoke_debug_func"}) {
    auto vm = calling(name);
    ASSERT_FALSE(vm.ok()) << name;
    EXPECT_EQ(vm.status().code(), StatusCode::kUnimplemented);
    EXPECT_NE(vm.status().message().find(name), std::string::npos) << vm.status().message();
  }
  // The LLM builtins resolve at creation; called wrongly, they say how.
  for (const char* name : {"vm.builtin.paged_attention_kv_cache_create", "vm.builtin.ndarray_cache.load",
                           "vm.builtin.cuda_graph.run_or_capture", "vm.builtin.kv_state_add_sequence",
                           "vm.builtin.sample_top_p_from_logits"}) {
    auto vm = calling(name);
    ASSERT_TRUE(vm.ok()) << name << ": " << vm.status().ToString();
    auto result = (*vm)->Invoke("main", {});
    ASSERT_FALSE(result.ok()) << name;
    EXPECT_TRUE(result.status().message().find("argument") != std::string::npos) << result.status().ToString();
  }
  auto vm = calling("fused_kernel_nobody_has");
  ASSERT_FALSE(vm.ok());
  EXPECT_EQ(vm.status().code(), StatusCode::kNotFound);
  EXPECT_NE(vm.status().message().find("fused_kernel_nobody_has"), std::string::npos);
}

TEST(RelaxBytecode, ShapeAndTupleParametersAreChecked) {
  RelaxProgram p;
  const auto [check_shape, check_tuple] = p.Builtins("check_shape_info", "check_tuple_info");
  const uint32_t err = p.String("ErrorContext(fn=main)");
  p.Function("main", {"s", "t"}, 2);
  p.Call(check_shape, kRelaxVoidRegister, {p.Reg(0), p.Imm(2), p.Const(err)});
  p.Call(check_tuple, kRelaxVoidRegister, {p.Reg(1), p.Imm(2), p.Const(err)});
  p.Ret(0);
  p.End();
  HETRT_ASSERT_OK_AND_ASSIGN(auto vm, p.Build());
  auto call = [&](RelaxValue s, RelaxValue t) {
    std::vector<RelaxValue> args = {std::move(s), std::move(t)};
    return vm->Invoke("main", args);
  };
  const RelaxValue pair = RelaxValue::Tuple({RelaxValue::Int(1), RelaxValue::Int(2)});
  HETRT_ASSERT_OK_AND_ASSIGN(RelaxValue r, call(RelaxValue::Shape({2, 3}), pair));
  EXPECT_EQ(r.shape(), (std::vector<int64_t>{2, 3}));
  auto bad = call(RelaxValue::Shape({2}), pair);
  EXPECT_NE(bad.status().message().find("ErrorContext(fn=main): expected a shape of 2 dims, got shape [2]"),
            std::string::npos)
      << bad.status().message();
  bad = call(RelaxValue::Shape({2, 3}), RelaxValue::Tuple({RelaxValue::Int(1)}));
  EXPECT_NE(bad.status().message().find("expected a tuple of 2 items, got tuple of 1"), std::string::npos)
      << bad.status().message();
  bad = call(RelaxValue::Int(3), pair);
  EXPECT_NE(bad.status().message().find("expected a shape, got int 3"), std::string::npos) << bad.status().message();
}

TEST(RelaxBytecode, RunawayRecursionIsAnErrorNotACrash) {
  RelaxProgram p;
  p.Function("main", {"x"}, 2);
  p.Call(0, 1, {p.Reg(0)});  // main calls itself forever
  p.Ret(1);
  p.End();
  HETRT_ASSERT_OK_AND_ASSIGN(auto vm, p.Build());
  std::vector<RelaxValue> args = {RelaxValue::Int(1)};
  auto r = vm->Invoke("main", args);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("nested deeper"), std::string::npos);
}

}  // namespace
}  // namespace hetrt::testing

namespace hetrt::testing {
namespace {

// hetrt's own Relax executables (RelaxExecutableFromGraph): the two-branch
// model of the kernel set, one branch on an accelerator, as a Relax VM
// executable and as a graph, give the same output; CPU copies of the
// accelerator's weights and the branch's result go through to_device.
Tensor TwoBranchData(const kernels::TwoBranchShape& shape) {
  Tensor x = Tensor::EmptyHost({shape.rows, shape.width}, {kDLFloat, 32, 1}).value();
  for (int64_t i = 0; i < x.num_elements(); ++i) x.data_as<float>()[i] = std::sin(0.37f * static_cast<float>(i));
  return x;
}

// TVM v0.20 wrote the same executable under the root key relax.VMExecutable
// (docs/tvm-ffi.md (a)): it opens and runs as the v0.14-v0.19 one does.
TEST(RelaxFromGraph, AV020ExecutableRootedAtRelaxVMExecutableRunsTheSame) {
  const kernels::TwoBranchShape shape{.layers = 1, .rows = 4, .width = 16};
  const Tensor x = TwoBranchData(shape);
  HETRT_ASSERT_OK_AND_ASSIGN(auto built, kernels::BuildTwoBranchModel(kDLCPU, shape));
  const std::string base = ::testing::TempDir() + "/relax_v020_" + std::to_string(getpid());
  HETRT_ASSERT_OK_AND_ASSIGN(std::vector<DLDevice> devices,
                             kernels::ExportRelax(built.graph_json, built.params, base + "_v018.so"));
  HETRT_ASSERT_OK(kernels::ExportRelax(built.graph_json, built.params, base + "_v020.so", "relax.VMExecutable")
                      .status());
  HETRT_ASSERT_OK_AND_ASSIGN(auto root, LoadModuleFile(base + "_v020.so"));
  EXPECT_EQ(root->type_key(), "relax.VMExecutable");
  GraphExecutor::Options options;
  options.devices = devices;
  std::vector<Tensor> outputs;
  for (const char* era : {"_v018.so", "_v020.so"}) {
    HETRT_ASSERT_OK_AND_ASSIGN(Model model, OpenModel({base + era}, options));
    ASSERT_NE(dynamic_cast<RelaxExecutor*>(model.executor.get()), nullptr) << era;
    HETRT_ASSERT_OK(model.executor->SetInput("data", x));
    HETRT_ASSERT_OK(model.executor->Run());
    HETRT_ASSERT_OK_AND_ASSIGN(Tensor out, model.executor->GetOutput(0));
    outputs.push_back(out);
  }
  ExpectClose(outputs[1], outputs[0], "output_0");
  std::remove((base + "_v018.so").c_str());
  std::remove((base + "_v020.so").c_str());
}

TEST(RelaxFromGraph, TheKernelSetsTwoBranchModelMatchesItsGraphOnEveryDevice) {
  const kernels::TwoBranchShape shape{.layers = 2, .rows = 8, .width = 64};
  const Tensor x = TwoBranchData(shape);
  for (int32_t accel : {int32_t{kDLCPU}, int32_t{kDLOpenCL}, int32_t{kDLVulkan}}) {
    SCOPED_TRACE(DeviceTypeName(accel));
    if (accel != kDLCPU) HETRT_REQUIRE_DEVICE_OR_RETURN((DLDevice{static_cast<DLDeviceType>(accel), 0}));
    HETRT_ASSERT_OK_AND_ASSIGN(auto built, kernels::BuildTwoBranchModel(accel, shape));
    const std::string base = ::testing::TempDir() + "/relax_two_branch_" + std::to_string(getpid()) + "_" +
                             DeviceTypeName(accel);
    HETRT_ASSERT_OK_AND_ASSIGN(std::vector<DLDevice> devices,
                               kernels::ExportRelax(built.graph_json, built.params, base + "_relax.so"));
    EXPECT_EQ(devices.back().device_type, kDLCPU);
    std::vector<int32_t> types;
    for (const DLDevice& d : devices) types.push_back(d.device_type);
    HETRT_ASSERT_OK(kernels::ExportGraph(built.graph_json, built.params, types, base + "_graph.so"));
    GraphExecutor::Options options;
    options.devices = devices;
    HETRT_ASSERT_OK_AND_ASSIGN(Model relax, OpenModel({base + "_relax.so"}, options));
    HETRT_ASSERT_OK_AND_ASSIGN(Model graph, OpenModel({base + "_graph.so"}, options));
    ASSERT_NE(dynamic_cast<RelaxExecutor*>(relax.executor.get()), nullptr);
    for (Model* m : {&relax, &graph}) {
      HETRT_ASSERT_OK(m->executor->SetInput("data", x));
      for (int run = 0; run < 3; ++run) HETRT_ASSERT_OK(m->executor->Run());
    }
    HETRT_ASSERT_OK_AND_ASSIGN(Tensor got, relax.executor->GetOutput(0));
    HETRT_ASSERT_OK_AND_ASSIGN(Tensor want, graph.executor->GetOutput(0));
    ExpectClose(got, want, "output_0");
    // Steady state: a further call takes nothing from the plugins.
    auto& vm = dynamic_cast<RelaxExecutor*>(relax.executor.get())->vm();
    const uint64_t allocations = vm.PluginAllocations();
    HETRT_ASSERT_OK(relax.executor->Run());
    EXPECT_EQ(vm.PluginAllocations(), allocations);
    std::remove((base + "_relax.so").c_str());
    std::remove((base + "_graph.so").c_str());
  }
}

}  // namespace
}  // namespace hetrt::testing
