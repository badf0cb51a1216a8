// The serving core on real models and devices, without a network in between:
// repository layouts, metadata, instances on CPU and CPU+OpenCL, dynamic
// batching against unbatched runs, bad requests, broken models, load/unload,
// the queue bound, and the metrics text.
#include <gtest/gtest.h>

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "hetrt/exec/graph_model.h"
#include "hetrt/formats/npy.h"
#include "hetrt/formats/params.h"
#include "hetrt/llm/engine.h"
#include "hetrt/plugin_host/plugin_registry.h"
#include "hetrt/serve/generation.h"
#include "hetrt/serve/inference_server.h"
#include "kernel_set.h"
#include "test_support.h"
#include "two_branch_model.h"

namespace hetrt::serve {
namespace {

namespace fs = std::filesystem;
using ::hetrt::testing::TvmFixture;

// A fresh repository folder per test.
class Repository {
 public:
  Repository() {
    root_ = fs::temp_directory_path() /
            ("hetrt-serve-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  ~Repository() { fs::remove_all(root_); }
  std::string path() const { return root_.string(); }
  // Links `files` of a fixture folder into <model>/<version>/.
  void Link(const std::string& model, int version, const std::string& fixture_dir, std::vector<std::string> files) {
    const fs::path dir = root_ / model / std::to_string(version);
    fs::create_directories(dir);
    for (const std::string& f : files) fs::create_symlink(fs::path(fixture_dir) / f, dir / f);
  }
  std::string VersionDir(const std::string& model, int version) {
    const fs::path dir = root_ / model / std::to_string(version);
    fs::create_directories(dir);
    return dir.string();
  }
  void Config(const std::string& model, const std::string& json) {
    fs::create_directories(root_ / model);
    std::ofstream(root_ / model / "config.json") << json;
  }

 private:
  static inline int counter_ = 0;
  fs::path root_;
};

std::unique_ptr<InferenceServer> Start(const Repository& repo) {
  auto server = InferenceServer::Create({repo.path()});
  EXPECT_TRUE(server.ok()) << server.status().message();
  return server.ok() ? std::move(server).value() : nullptr;
}

InferRequest RequestFromParams(const std::string& model, const std::string& params_file) {
  InferRequest request;
  request.model = model;
  auto inputs = LoadParamDictFile(params_file);
  EXPECT_TRUE(inputs.ok()) << inputs.status().message();
  if (inputs.ok())
    for (auto& p : *inputs) request.inputs.push_back({p.name, p.tensor});
  return request;
}

void ExpectNear(const Tensor& got, const Tensor& want, float tolerance = 1e-5f) {
  ASSERT_EQ(got.shape(), want.shape());
  ASSERT_EQ(got.nbytes(), want.nbytes());
  for (int64_t i = 0; i < want.num_elements(); ++i)
    ASSERT_NEAR(got.data_as<float>()[i], want.data_as<float>()[i], tolerance) << "element " << i;
}

Tensor Expected(const std::string& dir) {
  auto t = LoadNpyFile(dir + "/output_0.npy");
  EXPECT_TRUE(t.ok()) << t.status().message();
  return t.ok() ? *t : Tensor();
}

// Version 1 of `model` from the deploy.so in `dir`, then the server.
std::unique_ptr<InferenceServer> StartServing(Repository& repo, const std::string& model, const std::string& dir) {
  repo.Link(model, 1, dir, {"deploy.so"});
  return Start(repo);
}

// A server of one fixture's deploy.so, its inputs and expected output.
struct OneModel {
  OneModel(const std::string& model, const std::string& dir)
      : server(StartServing(repo, model, dir)),
        request(RequestFromParams(model, dir + "/inputs.params")),
        expected(Expected(dir)) {}
  Repository repo;
  std::unique_ptr<InferenceServer> server;
  InferRequest request;
  Tensor expected;
};

TEST(InferenceServer, ServesADeployLibraryWithMetadataAndMatchesTvm) {
  HETRT_REQUIRE_FIXTURE(dir, "mlp");
  Repository repo;
  auto server = StartServing(repo, "mlp", dir);
  ASSERT_TRUE(server);
  EXPECT_TRUE(server->Live());
  EXPECT_TRUE(server->Ready());
  HETRT_ASSERT_OK_AND_ASSIGN(ModelMetadata meta, server->Metadata("mlp", ""));
  EXPECT_EQ(meta.name, "mlp");
  EXPECT_EQ(meta.versions, std::vector<std::string>{"1"});
  ASSERT_EQ(meta.inputs.size(), 1u);
  EXPECT_EQ(meta.inputs[0].name, "data");
  EXPECT_EQ(meta.inputs[0].datatype, "FP32");
  EXPECT_EQ(meta.inputs[0].shape, (std::vector<int64_t>{1, 784}));
  ASSERT_EQ(meta.outputs.size(), 1u);
  EXPECT_EQ(meta.outputs[0].name, "output_0");
  HETRT_ASSERT_OK_AND_ASSIGN(bool ready, server->ModelReady("mlp", "1"));
  EXPECT_TRUE(ready);

  InferRequest request = RequestFromParams("mlp", dir + "/inputs.params");
  request.id = "req-7";
  HETRT_ASSERT_OK_AND_ASSIGN(InferResponse response, server->Infer(request));
  EXPECT_EQ(response.id, "req-7");
  EXPECT_EQ(response.model, "mlp");
  EXPECT_EQ(response.version, "1");
  ASSERT_EQ(response.outputs.size(), 1u);
  EXPECT_EQ(response.outputs[0].name, "output_0");
  ExpectNear(response.outputs[0].tensor, Expected(dir));
}

TEST(InferenceServer, ServesAGraphTripleAndAnMlfTarball) {
  HETRT_REQUIRE_FIXTURE(dir, "add3");
  const std::string mlf = ::hetrt::testing::MlfFixturesDir();
  if (mlf.empty()) HETRT_MISSING("fixtures", "MLF fixtures not found under " << ::hetrt::testing::FixturesRoot());
  Repository repo;
  repo.Link("add3", 1, dir, {"graph.json", "lib.so", "params.params"});
  repo.Link("add3_mlf", 3, mlf, {"add3_graph_mlf.tar"});
  auto server = Start(repo);
  ASSERT_TRUE(server);
  EXPECT_TRUE(server->Ready());
  for (const std::string model : {"add3", "add3_mlf"}) {
    SCOPED_TRACE(model);
    HETRT_ASSERT_OK_AND_ASSIGN(InferResponse response, server->Infer(RequestFromParams(model, dir + "/inputs.params")));
    ASSERT_EQ(response.outputs.size(), 1u);
    ExpectNear(response.outputs[0].tensor, Expected(dir));
  }
  HETRT_ASSERT_OK_AND_ASSIGN(ModelMetadata meta, server->Metadata("add3_mlf", ""));
  EXPECT_EQ(meta.platform, "hetrt_mlf");
  EXPECT_EQ(meta.versions, std::vector<std::string>{"3"});
}

TEST(InferenceServer, TwoCpuOpenClInstancesServeConcurrentRequests) {
  HETRT_REQUIRE_OPENCL();
  HETRT_REQUIRE_FIXTURE(dir, "hetero_opencl_seed");
  Repository repo;
  repo.Link("hetero", 1, dir, {"deploy.so"});
  repo.Config("hetero", R"({"instance_group": [{"count": 2, "devices": ["cpu", "opencl"]}]})");
  auto server = Start(repo);
  ASSERT_TRUE(server);
  const Tensor expected = Expected(dir);
  const InferRequest request = RequestFromParams("hetero", dir + "/inputs.params");
  std::atomic<int> good{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 4; ++c)
    clients.emplace_back([&] {
      for (int i = 0; i < 10; ++i) {
        auto response = server->Infer(request);
        if (!response.ok()) {
          ADD_FAILURE() << response.status().message();
          continue;
        }
        ExpectNear(response->outputs[0].tensor, expected);
        ++good;
      }
    });
  for (auto& t : clients) t.join();
  EXPECT_EQ(good.load(), 40);
  const std::string metrics = server->MetricsText();
  // Both instances ran, each on its own CPU+OpenCL executor.
  EXPECT_NE(
      metrics.find(
          "hetrt_instance_executions_total{model=\"hetero\",version=\"1\",instance=\"1\",devices=\"cpu,opencl\"}"),
      std::string::npos)
      << metrics;
  // Sampled runs give compute time per lane: the host's and OpenCL's.
  EXPECT_NE(metrics.find("hetrt_instance_sampled_runs_total{model=\"hetero\",version=\"1\",instance=\"0\""),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("devices=\"cpu,opencl\",lane=\"host\"}"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("devices=\"cpu,opencl\",lane=\"opencl:0"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("hetrt_inference_requests_total{model=\"hetero\",version=\"1\",status=\"success\"} 40"),
            std::string::npos)
      << metrics;
}

// A model compiled for batch 4 (hetrt's kernels, rows independent), exported
// as a deploy library into <repo>/<model>/1/.
void ExportBatch4Model(Repository& repo, const std::string& model) {
  kernels::TwoBranchShape shape;
  shape.layers = 2;
  shape.rows = 4;
  shape.width = 32;
  HETRT_ASSERT_OK_AND_ASSIGN(auto built, kernels::BuildTwoBranchModel(kDLCPU, shape));
  HETRT_ASSERT_OK(kernels::ExportGraph(built.graph_json, built.params, std::vector<int32_t>{kDLCPU},
                                       repo.VersionDir(model, 1) + "/deploy.so"));
}

Tensor Rows(int64_t rows, int64_t width, float seed) {
  Tensor t = Tensor::EmptyHost({rows, width}, {kDLFloat, 32, 1}).value();
  for (int64_t i = 0; i < rows * width; ++i) t.data_as<float>()[i] = std::sin(seed + 0.37f * static_cast<float>(i));
  return t;
}

TEST(InferenceServer, DynamicBatchingPacksOneRowRequestsAndReturnsTheUnbatchedRows) {
  Repository repo;
  ExportBatch4Model(repo, "plain");
  ExportBatch4Model(repo, "batched");
  ExportBatch4Model(repo, "padded");
  repo.Config("padded", R"({"max_batch_size": 4})");  // no dynamic_batching: one request per run
  repo.Config("batched", R"({"max_batch_size": 4,
      "dynamic_batching": {"max_queue_delay_microseconds": 2000000, "preferred_batch_size": [4]}})");
  auto server = Start(repo);
  ASSERT_TRUE(server);
  HETRT_ASSERT_OK_AND_ASSIGN(ModelMetadata meta, server->Metadata("batched", ""));
  ASSERT_EQ(meta.inputs.size(), 1u);
  EXPECT_EQ(meta.inputs[0].shape, (std::vector<int64_t>{-1, 32}));  // the batch axis the server batches
  EXPECT_EQ(meta.outputs[0].shape, (std::vector<int64_t>{-1, 32}));
  HETRT_ASSERT_OK_AND_ASSIGN(ModelMetadata plain_meta, server->Metadata("plain", ""));
  EXPECT_EQ(plain_meta.inputs[0].shape, (std::vector<int64_t>{4, 32}));
  const std::string input = meta.inputs[0].name;

  // The reference: 8 distinct rows run unbatched, four at a time.
  std::vector<Tensor> rows, expected;
  for (int r = 0; r < 8; ++r) rows.push_back(Rows(1, 32, static_cast<float>(r)));
  for (int half = 0; half < 2; ++half) {
    Tensor four = Tensor::EmptyHost({4, 32}, {kDLFloat, 32, 1}).value();
    for (int r = 0; r < 4; ++r)
      std::memcpy(four.data_as<float>() + r * 32, rows[half * 4 + r].data(), 32 * sizeof(float));
    InferRequest request{"plain", "", "", {{input, four}}, {}};
    HETRT_ASSERT_OK_AND_ASSIGN(InferResponse response, server->Infer(request));
    for (int r = 0; r < 4; ++r) {
      Tensor row = Tensor::EmptyHost({1, 32}, {kDLFloat, 32, 1}).value();
      std::memcpy(row.data(), response.outputs[0].tensor.data_as<float>() + r * 32, 32 * sizeof(float));
      expected.push_back(row);
    }
  }
  // 8 concurrent one-row requests: packed into batches, each gets its own row.
  std::vector<std::thread> clients;
  for (int r = 0; r < 8; ++r)
    clients.emplace_back([&, r] {
      InferRequest request{"batched", "", "row" + std::to_string(r), {{input, rows[r]}}, {}};
      auto response = server->Infer(request);
      ASSERT_TRUE(response.ok()) << response.status().message();
      EXPECT_EQ(response->id, "row" + std::to_string(r));
      ExpectNear(response->outputs[0].tensor, expected[r]);
    });
  for (auto& t : clients) t.join();
  clients.clear();
  for (int r = 0; r < 4; ++r)
    clients.emplace_back([&, r] {
      InferRequest request{"padded", "", "", {{input, rows[r]}}, {}};
      auto response = server->Infer(request);
      ASSERT_TRUE(response.ok()) << response.status().message();
      ExpectNear(response->outputs[0].tensor, expected[r]);
    });
  for (auto& t : clients) t.join();
  EXPECT_NE(server->MetricsText().find("model=\"padded\",version=\"1\",batch_size=\"1\"} 4"), std::string::npos);
  // Two rows at once are fine too; more than max_batch_size is refused with the shape expected.
  InferRequest two{"batched", "", "", {{input, Rows(2, 32, 1.f)}}, {}};
  HETRT_ASSERT_OK_AND_ASSIGN(InferResponse two_out, server->Infer(two));
  EXPECT_EQ(two_out.outputs[0].tensor.shape(), (std::vector<int64_t>{2, 32}));
  InferRequest five{"batched", "", "", {{input, Rows(5, 32, 1.f)}}, {}};
  auto refused = server->Infer(five);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("expected [-1,32] with the first dimension between 1 and 4"),
            std::string::npos)
      << refused.status().message();
  // The metrics saw batches of more than one row.
  const std::string metrics = server->MetricsText();
  bool batched = false;
  for (int rows_run = 2; rows_run <= 4; ++rows_run)
    batched |= metrics.find("model=\"batched\",version=\"1\",batch_size=\"" + std::to_string(rows_run) + "\"") !=
               std::string::npos;
  EXPECT_TRUE(batched) << metrics;
}

// Requests whose tensors the graph takes in place (aligned host memory) and
// requests it copies (a misaligned view, a padded run) alternate on one
// instance: each gets the answer for its own rows, the executor never keeps
// a tensor of an answered request, no caller's tensor is written, and an
// answer's output (which the run wrote in place) is not written by later runs.
TEST(InferenceServer, InputsTakenInPlaceAndCopiedInputsAlternateCorrectly) {
  Repository repo;
  ExportBatch4Model(repo, "model");
  repo.Config("model", R"({"max_batch_size": 4})");  // a 1-row request runs padded
  {
    HETRT_ASSERT_OK_AND_ASSIGN(GraphModel graph, OpenGraphModel({repo.VersionDir("model", 1) + "/deploy.so"}, {}));
    ASSERT_TRUE(graph.executor->InputBindsInPlace(0)) << "the premise: this graph can take its input in place";
    ASSERT_TRUE(graph.executor->OutputBindsInPlace(0)) << "the premise: and write its output in place";
  }
  auto server = Start(repo);
  ASSERT_TRUE(server);
  HETRT_ASSERT_OK_AND_ASSIGN(ModelMetadata meta, server->Metadata("model", ""));
  const std::string input = meta.inputs[0].name;
  auto run = [&](const Tensor& rows) -> Tensor {
    auto response = server->Infer(InferRequest{"model", "", "", {{input, rows}}, {}});
    EXPECT_TRUE(response.ok()) << response.status().message();
    return response.ok() ? response->outputs[0].tensor : Tensor();
  };
  // What the instance copied so far, from /metrics: {input bytes, output bytes}.
  auto copied = [&] {
    const std::string metrics = server->MetricsText();
    std::pair<double, double> bytes{-1, -1};
    for (auto [direction, into] : {std::pair{"input", &bytes.first}, std::pair{"output", &bytes.second}}) {
      const std::string sample = std::string("hetrt_instance_copied_bytes_total{model=\"model\",version=\"1\",") +
                                 "instance=\"0\",devices=\"cpu\",direction=\"" + direction + "\"} ";
      const size_t at = metrics.find(sample);
      EXPECT_NE(at, std::string::npos) << metrics;
      if (at != std::string::npos) *into = std::stod(metrics.substr(at + sample.size()));
    }
    return bytes;
  };
  const std::pair<double, double> at_load = copied();  // the warm-up's runs
  auto copied_since_load = [&] {
    auto [in, out] = copied();
    return std::pair{in - at_load.first, out - at_load.second};
  };
  // Seed 1 in place, then the same rows from a misaligned copy.
  auto aligned1 = std::make_unique<Tensor>(Rows(4, 32, 1.f));
  const Tensor out1 = run(*aligned1);
  EXPECT_EQ(copied_since_load(), std::pair(0.0, 0.0)) << "an aligned host input and a host output: no copy";
  const std::vector<float> out1_then(out1.data_as<float>(), out1.data_as<float>() + out1.num_elements());
  ExpectNear(*aligned1, Rows(4, 32, 1.f), 0.f);  // not written
  aligned1.reset();                              // the request's memory is gone
  std::vector<float> spare(4 * 32 + 1);
  const Tensor seed1 = Rows(4, 32, 1.f);
  std::memcpy(spare.data() + 1, seed1.data(), seed1.nbytes());
  const Tensor misaligned = Tensor::Borrow(spare.data() + 1, {kDLCPU, 0}, {4, 32}, {kDLFloat, 32, 1});
  ExpectNear(run(misaligned), out1, 0.f);
  const double rows_bytes = 4 * 32 * sizeof(float);
  EXPECT_EQ(copied_since_load(), std::pair(rows_bytes, 0.0)) << "the misaligned input is copied, the output not";
  // Seed 2 in place; its first row alone (padded, copied) gives that row's answer.
  const Tensor out2 = run(Rows(4, 32, 2.f));
  EXPECT_NE(std::memcmp(out1.data(), out2.data(), out1.nbytes()), 0);
  const Tensor row = run(Rows(1, 32, 2.f));
  ASSERT_EQ(row.shape(), (std::vector<int64_t>{1, 32}));
  EXPECT_EQ(std::memcmp(row.data(), out2.data(), row.nbytes()), 0);
  // The padded row: packed into 4 rows, then set (two copies); its answer sliced out of the output.
  EXPECT_EQ(copied_since_load(), std::pair(3 * rows_bytes, rows_bytes / 4));
  // In place again after the copies.
  ExpectNear(run(Rows(4, 32, 2.f)), out2, 0.f);
  EXPECT_EQ(copied_since_load(), std::pair(3 * rows_bytes, rows_bytes / 4));
  // The first answer, held all along, is as it was.
  EXPECT_TRUE(std::equal(out1_then.begin(), out1_then.end(), out1.data_as<float>()));
}

TEST(InferenceServer, BadRequestsGetClearErrorsAndTheServerKeepsServing) {
  HETRT_REQUIRE_FIXTURE(dir, "add3");
  OneModel add3("add3", dir);
  ASSERT_TRUE(add3.server);
  const InferRequest& good = add3.request;
  auto expect_error = [&](InferRequest request, StatusCode code, const std::string& words) {
    auto response = add3.server->Infer(std::move(request));
    ASSERT_FALSE(response.ok());
    EXPECT_EQ(response.status().code(), code) << response.status().message();
    EXPECT_NE(response.status().message().find(words), std::string::npos) << response.status().message();
  };
  InferRequest r = good;
  r.model = "nope";
  expect_error(r, StatusCode::kNotFound, "unknown model 'nope'");
  r = good;
  r.version = "7";
  expect_error(r, StatusCode::kNotFound, "no version '7' loaded (loaded: 1)");
  r = good;
  r.inputs[0].name = "zz";
  expect_error(r, StatusCode::kInvalidArgument, "no input named 'zz' (inputs: a, b, c)");
  // The inputs by name, in an order of our own: a first.
  r = good;
  std::sort(r.inputs.begin(), r.inputs.end(),
            [](const InferTensor& x, const InferTensor& y) { return x.name < y.name; });
  const InferRequest sorted = r;
  r.inputs.pop_back();
  expect_error(r, StatusCode::kInvalidArgument, "input 'c' is missing");
  r = sorted;
  r.inputs.push_back(r.inputs[0]);
  expect_error(r, StatusCode::kInvalidArgument, "input 'a' is given twice");
  r = sorted;
  r.inputs[0].tensor = Tensor::EmptyHost({1, 10}, {kDLInt, 32, 1}).value();
  expect_error(r, StatusCode::kInvalidArgument, "input 'a': datatype INT32, expected FP32");
  r = sorted;
  r.inputs[0].tensor = Tensor::EmptyHost({2, 10}, {kDLFloat, 32, 1}).value();
  expect_error(r, StatusCode::kInvalidArgument, "input 'a': shape [2,10], expected [1,10]");
  r = good;
  r.outputs = {"output_3"};
  expect_error(r, StatusCode::kInvalidArgument, "no output named 'output_3'");
  HETRT_ASSERT_OK_AND_ASSIGN(InferResponse response, add3.server->Infer(good));
  ExpectNear(response.outputs[0].tensor, add3.expected);
}

TEST(InferenceServer, ABrokenModelIsReportedAndDoesNotStopTheOthers) {
  HETRT_REQUIRE_FIXTURE(dir, "add3");
  Repository repo;
  repo.Link("add3", 1, dir, {"deploy.so"});
  std::ofstream(repo.VersionDir("broken", 1) + "/deploy.so") << "not an ELF file";
  repo.Config("typo", R"({"max_batch_sise": 4})");
  auto server = StartServing(repo, "typo", dir);
  ASSERT_TRUE(server);
  EXPECT_FALSE(server->Ready());  // strict readiness: a model asked for is not ready
  HETRT_ASSERT_OK_AND_ASSIGN(bool ready, server->ModelReady("broken", ""));
  EXPECT_FALSE(ready);
  std::map<std::string, RepositoryEntry> index;
  for (const RepositoryEntry& e : server->Index(false)) index[e.name] = e;
  ASSERT_EQ(index.size(), 3u);
  EXPECT_EQ(index["add3"].state, "READY");
  EXPECT_EQ(index["broken"].state, "UNAVAILABLE");
  EXPECT_NE(index["broken"].reason.find("broken/1/deploy.so"), std::string::npos) << index["broken"].reason;
  EXPECT_NE(index["typo"].reason.find("unknown field 'max_batch_sise'"), std::string::npos) << index["typo"].reason;
  EXPECT_EQ(server->Index(true).size(), 1u);
  auto refused = server->Infer(RequestFromParams("broken", dir + "/inputs.params"));
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
  HETRT_ASSERT_OK_AND_ASSIGN(InferResponse response, server->Infer(RequestFromParams("add3", dir + "/inputs.params")));
  ExpectNear(response.outputs[0].tensor, Expected(dir));
}

// This process's threads whose names start with `prefix`, as /proc/self/task entries.
std::vector<fs::path> ThreadsNamed(const std::string& prefix) {
  std::vector<fs::path> threads;
  for (const auto& task : fs::directory_iterator("/proc/self/task")) {
    std::string name;
    std::getline(std::ifstream(task.path() / "comm"), name);
    if (name.rfind(prefix, 0) == 0) threads.push_back(task.path());
  }
  return threads;
}

// Threads of the CPU plugin's pools in this process (its workers are named hetrt-cpu-N).
int CpuPoolThreads() { return static_cast<int>(ThreadsNamed("hetrt-cpu-").size()); }

// A thread's scheduling policy (SCHED_OTHER, SCHED_BATCH, ...): field 41 of its stat.
int SchedulingPolicy(const fs::path& task) {
  std::string stat;
  std::getline(std::ifstream(task / "stat"), stat);
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));  // from field 3 on: the name may hold spaces
  std::string field;
  for (int i = 3; i <= 41 && fields >> field; ++i) {
  }
  return std::stoi(field);
}

// The instances of a model with several overlap their devices: their threads
// run SCHED_BATCH, so that one's wake-up does not preempt another's CPU stage.
// A model with one instance keeps the default policy.
TEST(InferenceServer, InstanceThreadsRunSchedBatchWhenAModelHasSeveral) {
  HETRT_REQUIRE_FIXTURE(dir, "add3");
  Repository repo;
  repo.Link("one", 1, dir, {"deploy.so"});
  repo.Link("two", 1, dir, {"deploy.so"});
  repo.Config("two", R"({"instance_group": [{"count": 2}]})");
  auto server = Start(repo);
  ASSERT_TRUE(server);
  std::map<int, int> threads_by_policy;
  for (const fs::path& task : ThreadsNamed("hetrt-instance")) ++threads_by_policy[SchedulingPolicy(task)];
  EXPECT_EQ(threads_by_policy, (std::map<int, int>{{SCHED_OTHER, 1}, {SCHED_BATCH, 2}}));
  HETRT_ASSERT_OK_AND_ASSIGN(InferResponse response, server->Infer(RequestFromParams("two", dir + "/inputs.params")));
  ExpectNear(response.outputs[0].tensor, Expected(dir));
}

TEST(InferenceServer, ParametersGiveAModelPluginsOfItsOwnWithTheirOptions) {
  HETRT_REQUIRE_FIXTURE(dir, "add3");
  (void)PluginRegistry::Global();  // the process-wide pool is there before counting
  const int before = CpuPoolThreads();
  Repository repo;
  for (const char* model : {"add3", "bad_value", "no_plugin", "no_dot", "not_triton"}) repo.Link(model, 1, dir, {"deploy.so"});
  repo.Config("add3", R"({"instance_group": [{"count": 2}],
                          "parameters": {"cpu.num_threads": {"string_value": "3"}, "cpu.spin_us": {"string_value": "0"}}})");
  repo.Config("bad_value", R"({"parameters": {"cpu.num_threads": {"string_value": "0"}}})");
  repo.Config("no_plugin", R"({"parameters": {"tpu.num_threads": {"string_value": "1"}}})");
  repo.Config("no_dot", R"({"parameters": {"num_threads": {"string_value": "1"}}})");
  repo.Config("not_triton", R"({"parameters": {"cpu.num_threads": "1"}})");
  auto server = Start(repo);
  ASSERT_TRUE(server);
  // The model's two instances share a CPU pool of three threads of their own: two workers.
  EXPECT_EQ(CpuPoolThreads() - before, 2);
  HETRT_ASSERT_OK_AND_ASSIGN(InferResponse response, server->Infer(RequestFromParams("add3", dir + "/inputs.params")));
  ExpectNear(response.outputs[0].tensor, Expected(dir));
  // A reload with the same settings keeps the model's plugins (its library
  // stays loaded through them); other settings replace them, and without
  // parameters the model goes back to the process-wide plugins. The same
  // library file each time: the old versions let it go first.
  HETRT_ASSERT_OK(server->Load("add3"));
  EXPECT_EQ(CpuPoolThreads() - before, 2);
  repo.Config("add3", R"({"parameters": {"cpu.num_threads": {"string_value": "2"}}})");
  HETRT_ASSERT_OK(server->Load("add3"));
  EXPECT_EQ(CpuPoolThreads() - before, 1);
  HETRT_ASSERT_OK_AND_ASSIGN(response, server->Infer(RequestFromParams("add3", dir + "/inputs.params")));
  ExpectNear(response.outputs[0].tensor, Expected(dir));
  repo.Config("add3", "{}");
  HETRT_ASSERT_OK(server->Load("add3"));
  EXPECT_EQ(CpuPoolThreads() - before, 0);
  HETRT_ASSERT_OK_AND_ASSIGN(response, server->Infer(RequestFromParams("add3", dir + "/inputs.params")));
  ExpectNear(response.outputs[0].tensor, Expected(dir));

  std::map<std::string, std::string> reasons;
  for (const RepositoryEntry& e : server->Index(false)) reasons[e.name] = e.reason;
  EXPECT_EQ(reasons["add3"], "");
  EXPECT_NE(reasons["bad_value"].find("parameters: cpu.num_threads='0'"), std::string::npos) << reasons["bad_value"];
  EXPECT_NE(reasons["bad_value"].find("num_threads=\"0\" is not an integer in [1,"), std::string::npos)
      << reasons["bad_value"];
  EXPECT_NE(reasons["no_plugin"].find("no plugin named 'tpu' (found: cpu"), std::string::npos) << reasons["no_plugin"];
  EXPECT_NE(reasons["no_dot"].find("'num_threads' must name a plugin and one of its options"), std::string::npos)
      << reasons["no_dot"];
  EXPECT_NE(reasons["not_triton"].find("parameters.cpu.num_threads must be {\"string_value\""), std::string::npos)
      << reasons["not_triton"];
  server.reset();  // the instances' plugins go with them
  EXPECT_EQ(CpuPoolThreads(), before);
}

TEST(InferenceServer, LoadRollsInANewVersionAndUnloadStopsServing) {
  HETRT_REQUIRE_FIXTURE(dir, "add3");
  Repository repo;
  auto server = StartServing(repo, "add3", dir);
  ASSERT_TRUE(server);
  repo.Link("add3", 2, dir, {"graph.json", "lib.so", "params.params"});
  HETRT_ASSERT_OK_AND_ASSIGN(ModelMetadata before, server->Metadata("add3", ""));
  EXPECT_EQ(before.versions, std::vector<std::string>{"1"});
  HETRT_ASSERT_OK(server->Load("add3"));
  HETRT_ASSERT_OK_AND_ASSIGN(ModelMetadata after, server->Metadata("add3", ""));
  EXPECT_EQ(after.versions, std::vector<std::string>{"2"});
  HETRT_ASSERT_OK_AND_ASSIGN(InferResponse response, server->Infer(RequestFromParams("add3", dir + "/inputs.params")));
  EXPECT_EQ(response.version, "2");
  ExpectNear(response.outputs[0].tensor, Expected(dir));
  HETRT_ASSERT_OK(server->Unload("add3"));
  HETRT_ASSERT_OK_AND_ASSIGN(bool ready, server->ModelReady("add3", ""));
  EXPECT_FALSE(ready);
  EXPECT_EQ(server->Infer(RequestFromParams("add3", dir + "/inputs.params")).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(server->Load("../add3").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(server->Load("missing").code(), StatusCode::kNotFound);
}

// Runs that bring the instance's recent run time down from the warm-up's
// (long under sanitizers) to mlp's microseconds: each run weighs a quarter.
void WearDownTheWarmUp(InferenceServer& server, const InferRequest& request) {
  for (int i = 0; i < 64; ++i) ASSERT_TRUE(server.Infer(request).ok());
}

// Submits `request` alone in flight until it runs on this thread, and calls
// `then` inside its callback, while it is still in flight. A short model's run
// preempted on a busy machine reads long, and requests then go to the
// instance's thread until its recent runs read short again: on an idle
// machine the first try runs here. False when none did in 200 tries.
bool InferAsyncUntilItRunsHere(InferenceServer& server, const InferRequest& request, const Tensor& expected,
                               const std::function<void()>& then) {
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<bool> ran_here{false};
  for (int attempt = 0; attempt < 200 && !ran_here; ++attempt) {
    std::promise<void> answered;
    server.InferAsync(request, [&](Result<InferResponse> response) {
      EXPECT_TRUE(response.ok()) << response.status().message();
      if (response.ok()) ExpectNear(response->outputs[0].tensor, expected);
      if (std::this_thread::get_id() == caller) {
        ran_here = true;
        then();
      }
      answered.set_value();
    });
    answered.get_future().wait();
  }
  return ran_here;
}

// gRPC's callback threads submit with InferAsync. A short model's request
// alone in flight runs on the submitting thread (no hand-off on the latency
// path); one submitted while another is in flight is left to the instance's
// thread, so that a callback thread gets back to its connections at once.
TEST(InferenceServer, InferAsyncRunsARequestAloneOnTheCallingThreadAndLeavesTheRestToTheInstance) {
  HETRT_REQUIRE_FIXTURE(dir, "mlp");
  OneModel served("mlp", dir);
  ASSERT_TRUE(served.server);
  InferenceServer* server = served.server.get();
  const InferRequest& request = served.request;
  const Tensor& expected = served.expected;
  WearDownTheWarmUp(*server, request);
  const std::thread::id caller = std::this_thread::get_id();
  constexpr int kBehind = 4;
  std::mutex mutex;
  std::condition_variable all_answered;
  std::vector<std::thread::id> answered_on;
  auto check = [&](Result<InferResponse> response) {
    ASSERT_TRUE(response.ok()) << response.status().message();
    ExpectNear(response->outputs[0].tensor, expected);
    std::lock_guard<std::mutex> lock(mutex);
    answered_on.push_back(std::this_thread::get_id());
    all_answered.notify_all();
  };
  // The others are submitted while the first is still in flight.
  ASSERT_TRUE(InferAsyncUntilItRunsHere(*server, request, expected, [&] {
    for (int i = 0; i < kBehind; ++i) server->InferAsync(request, check);
  })) << "no request alone in flight ran on the submitting thread";
  std::unique_lock<std::mutex> lock(mutex);
  ASSERT_TRUE(all_answered.wait_for(lock, std::chrono::seconds(30), [&] { return answered_on.size() == kBehind; }));
  for (int i = 0; i < kBehind; ++i) EXPECT_NE(answered_on[static_cast<size_t>(i)], caller) << "request " << i + 1;
  lock.unlock();
  // An error is answered without the server's lock held: `done` may call the server.
  bool refused = false;
  server->InferAsync({"missing", "", "", {}, {}}, [&](Result<InferResponse> response) {
    EXPECT_EQ(response.status().code(), StatusCode::kNotFound);
    refused = server->Ready();
  });
  EXPECT_TRUE(refused);
}

// An unload stops the version while a gRPC-style caller is being answered,
// with requests queued behind its own: they are answered, and the unload
// returns.
TEST(InferenceServer, UnloadWhileRequestsQueueBehindOneBeingAnsweredReturns) {
  HETRT_REQUIRE_FIXTURE(dir, "mlp");
  OneModel served("mlp", dir);
  ASSERT_TRUE(served.server);
  InferenceServer* server = served.server.get();
  WearDownTheWarmUp(*server, served.request);
  std::atomic<int> answered{0};
  auto check = [&](Result<InferResponse> response) {
    EXPECT_TRUE(response.ok()) << response.status().message();
    ++answered;
  };
  std::thread unload;
  ASSERT_TRUE(InferAsyncUntilItRunsHere(*server, served.request, served.expected, [&] {
    for (int i = 0; i < 2; ++i) server->InferAsync(served.request, check);
    unload = std::thread([&] { EXPECT_TRUE(server->Unload("mlp").ok()); });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the stop begins meanwhile
  })) << "no request alone in flight ran on the submitting thread";
  unload.join();
  EXPECT_EQ(answered.load(), 2);
}

// A model whose runs are long (resnet18: milliseconds) is left to its
// instance's thread: an event-loop thread must get back to its connections.
TEST(InferenceServer, InferAsyncLeavesLongRunsToTheInstanceThread) {
  HETRT_REQUIRE_FIXTURE(dir, "resnet18");
  OneModel served("resnet", dir);
  ASSERT_TRUE(served.server);
  std::promise<std::thread::id> answered_on;
  served.server->InferAsync(served.request, [&](Result<InferResponse> response) {
    EXPECT_TRUE(response.ok()) << response.status().message();
    if (response.ok()) ExpectNear(response->outputs[0].tensor, served.expected, 1e-4f);
    answered_on.set_value(std::this_thread::get_id());
  });
  EXPECT_NE(answered_on.get_future().get(), std::this_thread::get_id());
}

// A request InferAsync left queued is in flight until answered: Drain (after
// which the frontends stop listening) waits for it to be answered as it would
// have been, here a row held for its batch's queue delay.
TEST(InferenceServer, DrainWaitsForRequestsInferAsyncLeftQueued) {
  Repository repo;
  ExportBatch4Model(repo, "held");
  repo.Config("held", R"({"max_batch_size": 4, "dynamic_batching": {"max_queue_delay_microseconds": 300000}})");
  auto server = Start(repo);
  ASSERT_TRUE(server);
  HETRT_ASSERT_OK_AND_ASSIGN(ModelMetadata meta, server->Metadata("held", ""));
  std::atomic<bool> answered{false};
  const auto sent = std::chrono::steady_clock::now();
  server->InferAsync({"held", "", "", {{meta.inputs[0].name, Rows(1, 32, 1.0f)}}, {}},
                     [&](Result<InferResponse> response) {
                       EXPECT_TRUE(response.ok()) << response.status().message();
                       answered = true;
                     });
  server->Drain();
  EXPECT_TRUE(answered.load());
  // Held for its delay, not flushed by the drain (a lower bound: never flaky).
  EXPECT_GE(std::chrono::steady_clock::now() - sent, std::chrono::milliseconds(300));
}

TEST(InferenceServer, AFullQueueAnswersUnavailableAndNothingHangs) {
  HETRT_REQUIRE_FIXTURE(dir, "resnet18");
  Repository repo;
  repo.Link("resnet", 1, dir, {"deploy.so"});
  repo.Config("resnet", R"({"max_queue_size": 1})");
  auto server = Start(repo);
  ASSERT_TRUE(server);
  const InferRequest request = RequestFromParams("resnet", dir + "/inputs.params");
  std::atomic<int> served{0}, refused{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 8; ++c)
    clients.emplace_back([&] {
      auto response = server->Infer(request);
      if (response.ok()) {
        ++served;
      } else {
        EXPECT_EQ(response.status().code(), StatusCode::kUnavailable);
        EXPECT_NE(response.status().message().find("queue is full (max_queue_size 1)"), std::string::npos);
        ++refused;
      }
    });
  for (auto& t : clients) t.join();
  EXPECT_EQ(served + refused, 8);
  EXPECT_GE(served.load(), 1);
  EXPECT_GE(refused.load(), 1);  // one runs, one waits: of 8 at once, some cannot
  EXPECT_NE(server->MetricsText().find("status=\"rejected\"} " + std::to_string(refused.load())), std::string::npos);
}

TEST(InferenceServer, DrainLetsRequestsInFlightFinishAndRefusesNewOnes) {
  HETRT_REQUIRE_FIXTURE(dir, "resnet18");
  OneModel resnet("resnet", dir);
  ASSERT_TRUE(resnet.server);
  std::atomic<int> finished{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 3; ++c)
    clients.emplace_back([&] {
      auto response = resnet.server->Infer(resnet.request);
      if (response.ok()) {
        ExpectNear(response->outputs[0].tensor, resnet.expected, 1e-4f);
        ++finished;
      } else {
        EXPECT_EQ(response.status().code(), StatusCode::kUnavailable) << response.status().message();
      }
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  resnet.server->Drain();
  for (auto& t : clients) t.join();
  EXPECT_GE(finished.load(), 1);
  EXPECT_FALSE(resnet.server->Ready());
  EXPECT_EQ(resnet.server->Infer(resnet.request).status().code(), StatusCode::kUnavailable);
}

// Health services that push status (gRPC's) learn of every readiness change at
// once: a load, an unload, the start of a drain; and not after removal.
TEST(InferenceServer, ReadinessObserversHearLoadsUnloadsAndTheDrain) {
  HETRT_REQUIRE_FIXTURE(dir, "mlp");
  // Declared before the server: an early failed assertion leaves the observer
  // registered, and the server's destructor (a drain) still calls it.
  std::atomic<int> calls{0};
  std::vector<bool> seen;  // Ready() as each call left it
  std::mutex seen_mutex;
  Repository repo;
  auto server = StartServing(repo, "mlp", dir);
  ASSERT_TRUE(server);
  const int id = server->AddReadinessObserver([&] {
    ++calls;
    std::lock_guard lock(seen_mutex);
    seen.push_back(server->Ready());
  });
  // A model asked for that cannot load makes the server not ready; unloading
  // it (no longer asked for) makes it ready again; so does reloading mlp.
  std::ofstream(repo.VersionDir("broken", 1) + "/deploy.so") << "not a shared library";
  EXPECT_FALSE(server->Load("broken").ok());
  HETRT_ASSERT_OK(server->Unload("broken"));
  HETRT_ASSERT_OK(server->Load("mlp"));
  server->BeginDrain();
  server->BeginDrain();  // a second call changes nothing and tells nobody
  EXPECT_EQ(seen, (std::vector<bool>{false, true, true, false}));
  EXPECT_TRUE(server->Live());
  EXPECT_FALSE(server->Ready());
  // Draining: metadata still answers, inference is refused with the reason.
  EXPECT_TRUE(server->Metadata("mlp", "").ok());
  auto refused = server->Infer(RequestFromParams("mlp", dir + "/inputs.params"));
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(refused.status().message().find("shutting down"), std::string::npos) << refused.status().message();
  server->RemoveReadinessObserver(id);
  EXPECT_TRUE(server->Unload("mlp").ok());  // a change nobody hears of any more
  server->Drain();
  EXPECT_EQ(calls.load(), 4);
}

// ---- language models (docs/serving-llm.md), in process: the scheduler, its
// queue, cancellation and the drain on TVM v0.25's tiny_llama.

std::string LlmFixture() {
  const fs::path dir = fs::path(::hetrt::testing::FixturesRoot()) / "tvm-0.25-llm" / "tiny_llama";
  return fs::is_directory(dir) ? dir.string() : std::string();
}

#define HETRT_REQUIRE_LLM_FIXTURE(var)  \
  const std::string var = LlmFixture(); \
  if (var.empty())                      \
  HETRT_MISSING("fixtures", "tvm-0.25-llm/tiny_llama not found under " << ::hetrt::testing::FixturesRoot())

// One generation's events as its sink receives them (on the scheduler thread).
struct Collected {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<int32_t> tokens;
  std::vector<GenerationEvent::Kind> kinds;
  std::optional<GenerationEvent> last;  // kEnd or kRefused

  GenerationSink Sink() {
    return [this](const GenerationEvent& e) {
      std::lock_guard<std::mutex> lock(mutex);
      kinds.push_back(e.kind);
      if (e.token >= 0) tokens.push_back(e.token);
      if (e.kind == GenerationEvent::Kind::kEnd || e.kind == GenerationEvent::Kind::kRefused) last = e;
      changed.notify_all();
    };
  }
  // Waits until `done` holds (under the lock); false after 60 s.
  template <typename Done>
  bool WaitFor(Done done) {
    std::unique_lock<std::mutex> lock(mutex);
    return changed.wait_for(lock, std::chrono::seconds(60), [&] { return done(*this); });
  }
  bool Ended() {
    return WaitFor([](Collected& c) { return c.last.has_value(); });
  }
};

GenerateRequest Prompt(std::vector<int32_t> ids, int64_t max_tokens) {
  GenerateRequest r;
  r.model = "llm";
  r.input_ids = std::move(ids);
  r.max_tokens = max_tokens;
  return r;
}

// What the engine alone generates (greedy unless `seed`).
std::vector<int32_t> EngineTokens(const std::string& dir, std::vector<int32_t> prompt, int64_t max_tokens,
                                  std::optional<uint64_t> seed = std::nullopt) {
  LlmEngineOptions options;
  options.model_dir = dir;
  auto engine = LlmEngine::Open(options);
  EXPECT_TRUE(engine.ok()) << engine.status().message();
  if (!engine.ok()) return {};
  GenerationRequest request;
  request.prompt = std::move(prompt);
  request.max_tokens = max_tokens;
  if (seed) {
    request.sampling.temperature = 0.8f;
    request.sampling.top_p = 0.9f;
    request.sampling.seed = *seed;
    request.sampling.has_seed = true;
  }
  auto results = (*engine)->Generate({request});
  EXPECT_TRUE(results.ok()) << results.status().message();
  return results.ok() ? (*results)[0].tokens : std::vector<int32_t>();
}

TEST(GenerativeModel, RequestsOnTheSchedulerGetTheEnginesTokensWhileOthersJoinAndLeave) {
  HETRT_REQUIRE_LLM_FIXTURE(dir);
  Repository repo;
  repo.Link("llm", 1, dir, {"model.so", "params"});
  auto server = Start(repo);
  ASSERT_TRUE(server);
  auto metadata = server->Metadata("llm", "");
  ASSERT_TRUE(metadata.ok()) << metadata.status().message();
  EXPECT_EQ(metadata->platform, "hetrt_llm");
  EXPECT_TRUE(metadata->generative);
  // Six requests of different lengths at once (batch 4: two wait, then join
  // as others leave), one of them sampled with a seed.
  std::vector<std::vector<int32_t>> prompts = {{1, 2, 3}, {9, 8, 7, 6, 5}, {42}, {100, 101}, {7, 7, 7, 7}, {250, 3}};
  std::vector<int64_t> lengths = {12, 5, 20, 3, 9, 15};
  std::vector<Collected> got(prompts.size());
  std::vector<std::shared_ptr<Generation>> handles;
  for (size_t i = 0; i < prompts.size(); ++i) {
    GenerateRequest r = Prompt(prompts[i], lengths[i]);
    if (i == 4) {
      r.temperature = 0.8;
      r.top_p = 0.9;
      r.seed = 7;
    }
    auto started = server->Generate(std::move(r), got[i].Sink());
    ASSERT_TRUE(started.ok()) << started.status().message();
    EXPECT_EQ((*started)->model_version(), 1);
    handles.push_back(*started);
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    ASSERT_TRUE(got[i].Ended()) << "request " << i;
    std::lock_guard<std::mutex> lock(got[i].mutex);
    EXPECT_EQ(got[i].kinds.front(), GenerationEvent::Kind::kAdmitted);
    EXPECT_EQ(got[i].last->kind, GenerationEvent::Kind::kEnd);
    EXPECT_STREQ(got[i].last->finish_reason, kFinishLength);
    EXPECT_EQ(got[i].last->completion_tokens, lengths[i]);
    EXPECT_EQ(got[i].last->prompt_tokens, static_cast<int64_t>(prompts[i].size()));
    EXPECT_EQ(got[i].tokens,
              EngineTokens(dir, prompts[i], lengths[i], i == 4 ? std::optional<uint64_t>(7) : std::nullopt))
        << "request " << i;
  }
  // Bad requests are refused at once, the sink never called.
  Collected bad;
  for (GenerateRequest r : {Prompt({256}, 4), Prompt({}, 4), Prompt({1}, -1), Prompt({1}, 500)}) {
    auto refused = server->Generate(std::move(r), bad.Sink());
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument) << refused.status().message();
  }
  GenerateRequest unknown = Prompt({1}, 1);
  unknown.model = "nope";
  EXPECT_EQ(server->Generate(unknown, bad.Sink()).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(bad.kinds.empty());
  // Infer on a language model says where its requests go.
  InferRequest infer;
  infer.model = "llm";
  auto answer = server->Infer(infer);
  ASSERT_FALSE(answer.ok());
  EXPECT_NE(answer.status().message().find("generate"), std::string::npos) << answer.status().message();
  // The metrics count it all, and no page stays taken.
  const std::string metrics = server->MetricsText();
  EXPECT_NE(metrics.find("hetrt_llm_request_success_total{model=\"llm\",version=\"1\",finished_reason=\"length\"} 6"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("hetrt_llm_kv_cache_pages{model=\"llm\",version=\"1\",state=\"used\"} 0"), std::string::npos)
      << metrics;
}

TEST(GenerativeModel, CancelFreesThePagesAndAFullQueueOrAShutdownRefuses) {
  HETRT_REQUIRE_LLM_FIXTURE(dir);
  Repository repo;
  repo.Link("llm", 1, dir, {"model.so", "params"});
  // One 100-token request fills the cache (96 + the spare page's tokens):
  // the next waits in the queue, the one after finds it full.
  repo.Config("llm", R"({"max_queue_size": 1, "generation": {"kv_cache_tokens": 112, "queue_timeout_ms": 60000}})");
  ServerOptions options{repo.path()};
  options.drain_timeout = std::chrono::milliseconds(0);
  auto created = InferenceServer::Create(options);
  ASSERT_TRUE(created.ok()) << created.status().message();
  auto& server = *created;
  // A request cancelled mid-stream ends "cancelled" and gives its pages back.
  Collected cancelled;
  auto first = server->Generate(Prompt({1, 2, 3, 4}, 100), cancelled.Sink());
  ASSERT_TRUE(first.ok()) << first.status().message();
  ASSERT_TRUE(cancelled.WaitFor([](Collected& c) { return !c.tokens.empty(); }));
  (*first)->Cancel();
  ASSERT_TRUE(cancelled.Ended());
  {
    // (A machine slow to reach the Cancel lets the 100 tokens finish first.)
    std::lock_guard<std::mutex> lock(cancelled.mutex);
    EXPECT_STREQ(cancelled.last->finish_reason, cancelled.tokens.size() < 100 ? kFinishCancelled : kFinishLength);
  }
  const std::string metrics = server->MetricsText();
  EXPECT_NE(metrics.find("hetrt_llm_kv_cache_pages{model=\"llm\",version=\"1\",state=\"used\"} 0"), std::string::npos)
      << metrics;
  // One request holds the cache: the next waits, the one after finds the queue full.
  Collected running, waiting, full;
  auto second = server->Generate(Prompt({1, 2, 3, 4}, 100), running.Sink());
  ASSERT_TRUE(second.ok()) << second.status().message();
  ASSERT_TRUE(running.WaitFor([](Collected& c) { return !c.tokens.empty(); }));
  auto third = server->Generate(Prompt({5, 6}, 100), waiting.Sink());
  ASSERT_TRUE(third.ok()) << third.status().message();
  auto fourth = server->Generate(Prompt({7}, 100), full.Sink());
  bool second_done = false;
  {
    std::lock_guard<std::mutex> lock(running.mutex);
    second_done = running.last.has_value();
  }
  if (!second_done) {  // still running, so it was when the fourth came: the third filled the queue
    ASSERT_FALSE(fourth.ok());
    EXPECT_EQ(fourth.status().code(), StatusCode::kUnavailable) << fourth.status().message();
  }
  // Drain with no time for running sequences: what runs ends "shutdown", what
  // waits is refused (503), new requests too.
  server->Drain();
  ASSERT_TRUE(running.Ended());
  ASSERT_TRUE(waiting.Ended());
  {
    std::lock_guard<std::mutex> lock(running.mutex);
    if (running.tokens.size() < 100) {
      EXPECT_STREQ(running.last->finish_reason, kFinishShutdown);
      EXPECT_EQ(running.last->status.code(), StatusCode::kUnavailable);
    }
  }
  {
    std::lock_guard<std::mutex> lock(waiting.mutex);
    if (waiting.last->kind == GenerationEvent::Kind::kRefused) {
      EXPECT_EQ(waiting.last->status.code(), StatusCode::kUnavailable) << waiting.last->status.message();
    }
  }
  EXPECT_EQ(server->Generate(Prompt({1}, 1), full.Sink()).status().code(), StatusCode::kUnavailable);
}

TEST(GenerativeModel, ConfigJsonSetsTheCacheTheDefaultsAndStopTokensAndRefusesWhatDoesNotApply) {
  HETRT_REQUIRE_LLM_FIXTURE(dir);
  HETRT_REQUIRE_FIXTURE(add3, "add3");
  const std::vector<int32_t> prompt = {1, 2, 3};
  const std::vector<int32_t> greedy = EngineTokens(dir, prompt, 7);
  ASSERT_EQ(greedy.size(), 7u);
  // A stop token from config.json: the first place greedy decoding meets it.
  const int32_t stop = greedy[3];
  const size_t stop_at = static_cast<size_t>(std::find(greedy.begin(), greedy.end(), stop) - greedy.begin());
  Repository repo;
  repo.Link("llm", 1, dir, {"model.so", "params"});
  repo.Config("llm", R"({"generation": {"kv_cache_pages": 5, "stop_token_ids": [)" + std::to_string(stop) +
                         R"(], "defaults": {"max_tokens": 7}}})");
  // What does not apply is a load error naming it.
  const std::vector<std::pair<std::string, std::string>> broken = {
      {R"({"generation": {"kv_cache_tokens": 64, "kv_cache_pages": 4}})", "not both"},
      {R"({"generation": {"kv_cache": 64}})", "unknown field 'kv_cache'"},
      {R"({"generation": {"defaults": {"temperature": -1}}})", "temperature"},
      {R"({"max_batch_size": 4, "dynamic_batching": {}})", "dynamic_batching"},
  };
  for (size_t i = 0; i < broken.size(); ++i) {
    repo.Link("llm_bad" + std::to_string(i), 1, dir, {"model.so", "params"});
    repo.Config("llm_bad" + std::to_string(i), broken[i].first);
  }
  repo.Link("tensor", 1, add3, {"graph.json", "lib.so", "params.params"});
  repo.Config("tensor", R"({"generation": {"kv_cache_tokens": 64}})");
  auto server = InferenceServer::Create({repo.path(), {"llm"}});
  ASSERT_TRUE(server.ok()) << server.status().message();
  for (size_t i = 0; i < broken.size(); ++i) {
    Status loaded = (*server)->Load("llm_bad" + std::to_string(i));
    ASSERT_FALSE(loaded.ok()) << broken[i].first;
    EXPECT_NE(loaded.message().find(broken[i].second), std::string::npos) << loaded.message();
  }
  Status tensor = (*server)->Load("tensor");
  ASSERT_FALSE(tensor.ok());
  EXPECT_NE(tensor.message().find("'generation' is for language models"), std::string::npos) << tensor.message();

  auto metadata = (*server)->Metadata("llm", "");
  ASSERT_TRUE(metadata.ok()) << metadata.status().message();
  const auto& facts = metadata->generative_facts;
  auto pages = std::find_if(facts.begin(), facts.end(), [](const auto& f) { return f.first == "kv_cache_pages"; });
  ASSERT_NE(pages, facts.end());
  EXPECT_EQ(pages->second, 6);  // 5 pages of tokens, and the spare one TVM's count adds
  // No max_tokens: the default 7, cut at config.json's stop token.
  Collected got;
  GenerateRequest request;
  request.model = "llm";
  request.input_ids = prompt;
  auto started = (*server)->Generate(request, got.Sink());
  ASSERT_TRUE(started.ok()) << started.status().message();
  ASSERT_TRUE(got.Ended());
  {
    std::lock_guard<std::mutex> lock(got.mutex);
    EXPECT_EQ(got.tokens, std::vector<int32_t>(greedy.begin(), greedy.begin() + static_cast<ptrdiff_t>(stop_at) + 1));
    EXPECT_STREQ(got.last->finish_reason, kFinishStop);
  }
  // A max_tokens near INT64_MAX is over the context, not an overflow.
  Collected refused;
  request.max_tokens = INT64_MAX;
  auto huge = (*server)->Generate(request, refused.Sink());
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), StatusCode::kInvalidArgument) << huge.status().message();
  // The steps and their thread CPU are on /metrics.
  const std::string metrics = (*server)->MetricsText();
  EXPECT_EQ(metrics.find("hetrt_llm_engine_steps_total{model=\"llm\",version=\"1\"} 0\n"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("hetrt_llm_engine_steps_total{model=\"llm\",version=\"1\"} "), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("hetrt_llm_engine_step_thread_cpu_seconds_total{model=\"llm\",version=\"1\"} "),
            std::string::npos)
      << metrics;
}

}  // namespace
}  // namespace hetrt::serve
