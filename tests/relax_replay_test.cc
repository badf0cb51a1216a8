// Replay of straight-line Relax calls (RelaxVirtualMachine::EnableReplay):
// replayed calls equal interpreted ones on a TVM-made model across batch
// sizes, a result still held is never overwritten, and what a recording
// cannot vouch for is refused or interpreted with the reason.
#include <gtest/gtest.h>

#include <cstring>

#include "hetrt/formats/params.h"
#include "hetrt/module/module_loader.h"
#include "relax_test_support.h"
#include "test_support.h"

namespace hetrt::testing {
namespace {

struct DynBatch {
  std::unique_ptr<RelaxVirtualMachine> vm;
  uint32_t main = 0;
};

// tvm-0.18-relax/relax_dyn_batch: main(x: [n, 784]) -> softmax [n, 10],
// straight-line, its storage sized through the shape heap by a shape function.
Result<DynBatch> OpenDynBatch(size_t replay_signatures) {
  const std::string dir = RelaxFixtureDir("relax_dyn_batch");
  if (dir.empty()) return NotFound("relax_dyn_batch not found under " + FixturesRoot());
  HETRT_ASSIGN_OR_RETURN(auto root, LoadModuleFile(dir + "/deploy.so"));
  DynBatch m;
  HETRT_ASSIGN_OR_RETURN(m.vm, RelaxVirtualMachine::Create(root, {}));
  HETRT_ASSIGN_OR_RETURN(m.main, m.vm->FindFunction("main"));
  if (replay_signatures > 0) HETRT_RETURN_IF_ERROR(m.vm->EnableReplay(m.main, replay_signatures));
  return m;
}

#define HETRT_OPEN_DYN_BATCH_OR_RETURN(var, signatures)                               \
  auto var##_opened = OpenDynBatch(signatures);                                       \
  if (!var##_opened.ok()) HETRT_MISSING("fixtures", var##_opened.status().message()); \
  DynBatch var = std::move(var##_opened).value()

Result<RelaxValue> Call(DynBatch& m, const Tensor& x) {
  const RelaxValue args[] = {RelaxValue::FromTensor(x)};
  return m.vm->Invoke(m.main, args);
}

void ExpectSameBytes(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  ASSERT_EQ(std::memcmp(got.data(), want.data(), got.nbytes()), 0) << what << ": the bytes differ";
}

TEST(RelaxReplay, ReplayedCallsEqualInterpretedOnesAcrossBatchSizes) {
  HETRT_OPEN_DYN_BATCH_OR_RETURN(replayed, 4);
  HETRT_OPEN_DYN_BATCH_OR_RETURN(interpreted, 0);
  const int64_t rows[] = {4, 4, 4, 2, 4, 2, 2, 7, 4};
  for (size_t i = 0; i < std::size(rows); ++i) {
    SCOPED_TRACE("call " + std::to_string(i) + ", " + std::to_string(rows[i]) + " rows");
    const Tensor x = Random({rows[i], 784}, static_cast<uint32_t>(100 + i));  // new data, new memory
    HETRT_ASSERT_OK_AND_ASSIGN(RelaxValue got, Call(replayed, x));
    HETRT_ASSERT_OK_AND_ASSIGN(RelaxValue want, Call(interpreted, x));
    ExpectSameBytes(got.tensor(), want.tensor(), "output");
  }
  // 4 rows: interpreted, recorded, then replayed; 2 rows likewise; 7 rows once.
  const RelaxReplayStats stats = replayed.vm->ReplayStats(replayed.main);
  EXPECT_TRUE(stats.disabled.empty()) << stats.disabled;
  EXPECT_EQ(stats.recorded, 2u);
  EXPECT_EQ(stats.replayed, 4u);
  EXPECT_EQ(stats.interpreted, 5u);
  EXPECT_EQ(stats.result_held, 0u);
  // A replayed call counts what it stands for.
  EXPECT_EQ(replayed.vm->last_call_stats().kernel_calls, interpreted.vm->last_call_stats().kernel_calls);
  EXPECT_EQ(replayed.vm->last_call_stats().instructions, interpreted.vm->last_call_stats().instructions);
}

TEST(RelaxReplay, ARecordingForAnotherSignatureMakesRoomForTheNewest) {
  HETRT_OPEN_DYN_BATCH_OR_RETURN(m, 1);
  for (int64_t n : {3, 3, 3, 5, 5, 5, 3, 3}) HETRT_ASSERT_OK(Call(m, Random({n, 784}, 9)).status());
  const RelaxReplayStats stats = m.vm->ReplayStats(m.main);
  EXPECT_EQ(stats.evicted, 2u);  // 5 rows pushed out 3, then 3 pushed out 5
  EXPECT_EQ(stats.recorded, 3u);
  EXPECT_EQ(stats.replayed, 3u);
}

// Replaying writes the recorded memory again: while a caller holds the last
// result (the value, a tensor taken from it, or a copy of that tensor) the
// call is interpreted into fresh memory instead.
TEST(RelaxReplay, AResultStillHeldIsNeverOverwritten) {
  HETRT_OPEN_DYN_BATCH_OR_RETURN(replayed, 2);
  HETRT_OPEN_DYN_BATCH_OR_RETURN(interpreted, 0);
  std::vector<Tensor> inputs, kept;
  for (uint32_t i = 0; i < 6; ++i) inputs.push_back(Random({2, 784}, 40 + i));
  HETRT_ASSERT_OK_AND_ASSIGN(RelaxValue first, Call(replayed, inputs[0]));
  HETRT_ASSERT_OK_AND_ASSIGN(RelaxValue second, Call(replayed, inputs[1]));  // recorded
  HETRT_ASSERT_OK_AND_ASSIGN(RelaxValue third, Call(replayed, inputs[2]));   // `second` held
  EXPECT_EQ(replayed.vm->ReplayStats(replayed.main).result_held, 1u);
  kept.push_back(first.tensor());
  kept.push_back(second.tensor());  // a copy of the tensor alone
  kept.push_back(third.tensor());
  first = second = third = RelaxValue();
  HETRT_ASSERT_OK_AND_ASSIGN(RelaxValue fourth, Call(replayed, inputs[3]));  // the copy of `second` held
  EXPECT_EQ(replayed.vm->ReplayStats(replayed.main).result_held, 2u);
  kept.push_back(fourth.tensor());
  fourth = RelaxValue();
  kept[1] = Tensor();  // the recording's memory is free again
  HETRT_ASSERT_OK_AND_ASSIGN(RelaxValue fifth, Call(replayed, inputs[4]));
  EXPECT_EQ(replayed.vm->ReplayStats(replayed.main).replayed, 1u);
  HETRT_ASSERT_OK_AND_ASSIGN(RelaxValue want_fifth, Call(interpreted, inputs[4]));
  ExpectSameBytes(fifth.tensor(), want_fifth.tensor(), "the replayed call");
  // Held while the next call replays: that one is interpreted.
  HETRT_ASSERT_OK_AND_ASSIGN(RelaxValue sixth, Call(replayed, inputs[5]));
  EXPECT_EQ(replayed.vm->ReplayStats(replayed.main).result_held, 3u);
  ExpectSameBytes(fifth.tensor(), want_fifth.tensor(), "the replayed call's result after the next call");
  for (size_t i : {0, 2, 3}) {
    HETRT_ASSERT_OK_AND_ASSIGN(RelaxValue want, Call(interpreted, inputs[i]));
    ExpectSameBytes(kept[i], want.tensor(), "call " + std::to_string(i) + "'s result, held");
  }
  HETRT_ASSERT_OK_AND_ASSIGN(RelaxValue want_sixth, Call(interpreted, inputs[5]));
  ExpectSameBytes(sixth.tensor(), want_sixth.tensor(), "the call after");
}

TEST(RelaxReplay, FunctionsThatBranchOrCallFunctionsAreRefusedByInstruction) {
  RelaxProgram p;
  const auto [read_if, copy] = p.Builtins("read_if_cond", "copy");
  const uint32_t inner = p.Function("inner", {"x"}, 1);
  p.Ret(0);
  p.End();
  p.Function("branches", {"c", "x"}, 3);
  p.Call(read_if, 2, {p.Reg(0)});
  p.If(2, 2);
  p.Call(copy, 1, {p.Reg(1)});
  p.Ret(1);
  p.End();
  p.Function("nests", {"x"}, 2);
  p.Call(inner, 1, {p.Reg(0)});
  p.Ret(1);
  p.End();
  HETRT_ASSERT_OK_AND_ASSIGN(auto vm, p.Build());
  HETRT_ASSERT_OK_AND_ASSIGN(uint32_t branches, vm->FindFunction("branches"));
  HETRT_ASSERT_OK_AND_ASSIGN(uint32_t nests, vm->FindFunction("nests"));
  const Status branch = vm->EnableReplay(branches, 2);
  EXPECT_EQ(branch.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(branch.message().find("function 'branches' instruction 1 branches"), std::string::npos) << branch.message();
  const Status nested = vm->EnableReplay(nests, 2);
  EXPECT_NE(nested.message().find("function 'nests' instruction 0 calls VM function 'inner'"), std::string::npos)
      << nested.message();
  EXPECT_NE(vm->ReplayStats(nests).disabled.find("not enabled"), std::string::npos);
}

// A view of a tensor argument depends on where the argument's memory is:
// the recording cannot keep it, so the function stays interpreted, and says why.
TEST(RelaxReplay, AValueMadeFromATensorArgumentKeepsTheFunctionInterpreted) {
  RelaxProgram p;
  const auto [reshape] = p.Builtins("reshape");
  const uint32_t flat = p.Shape({6});
  p.Function("main", {"x"}, 2);
  p.Call(reshape, 1, {p.Reg(0), p.Const(flat)});
  p.Ret(1);
  p.End();
  HETRT_ASSERT_OK_AND_ASSIGN(auto vm, p.Build());
  HETRT_ASSERT_OK_AND_ASSIGN(uint32_t main, vm->FindFunction("main"));
  HETRT_ASSERT_OK(vm->EnableReplay(main, 2));
  for (uint32_t i = 0; i < 4; ++i) {
    const Tensor x = Random({2, 3}, i);
    const RelaxValue args[] = {RelaxValue::FromTensor(x)};
    HETRT_ASSERT_OK_AND_ASSIGN(RelaxValue r, vm->Invoke(main, args));
    EXPECT_EQ(r.tensor().data(), x.data()) << "call " << i << ": not a view of its own argument";
    EXPECT_EQ(r.tensor().shape(), (std::vector<int64_t>{6}));
  }
  const RelaxReplayStats stats = vm->ReplayStats(main);
  EXPECT_EQ(stats.replayed, 0u);
  EXPECT_NE(stats.disabled.find("function 'main': vm.builtin.reshape (instruction 0) makes a value from tensor "
                                "argument 0"),
            std::string::npos)
      << stats.disabled;
}

}  // namespace
}  // namespace hetrt::testing
