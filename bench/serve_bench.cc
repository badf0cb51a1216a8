// `hetrt serve` side by side with in-process execution, in one run on one
// machine: the same model and instance count through the executor directly,
// REST with binary tensors, and gRPC. Latency p50/p99 at concurrency 1,
// throughput at concurrency 1/4/16, dynamic batching against one-request runs,
// and CPU+OpenCL instances overlapping across requests.
//
// The server runs inside this process on loopback (frontends on port 0), so
// clients and server share the machine's cores, as a sidecar would.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>

#include <benchmark/benchmark.h>
#include <grpcpp/grpcpp.h>
#include <httplib.h>

#include "grpc_service.grpc.pb.h"
#include "hetrt/exec/graph_model.h"
#include "hetrt/formats/npy.h"
#include "hetrt/serve/frontend.h"
#include "hetrt/serve/inference_server.h"
#include "kernel_set.h"
#include "two_branch_model.h"
#include "two_stage_model.h"

namespace hetrt {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string FixturesDir() {
  const char* env = std::getenv("HETRT_FIXTURES");
  return std::string(env ? env : HETRT_DEFAULT_FIXTURES_DIR) + "/tvm-0.18";
}

struct Input {
  std::string name;
  std::vector<int64_t> shape;
  std::string bytes;  // FP32, little-endian
};

// The models: name -> (files, config). Built once per process.
struct Environment {
  std::string repo;
  std::unique_ptr<serve::InferenceServer> server;
  std::unique_ptr<serve::Frontend> rest, grpc;
  int rest_port = 0, grpc_port = 0;
  std::map<std::string, std::vector<Input>> inputs;      // one request's inputs per model
  std::map<std::string, std::string> libs;               // model -> deploy library (in-process baseline)
  std::map<std::string, std::vector<DLDevice>> devices;  // model -> devices in process (default: the CPU)
  std::string error;
};

void Link(const std::string& repo, const std::string& model, const std::string& lib, const std::string& config) {
  fs::create_directories(repo + "/" + model + "/1");
  fs::create_symlink(lib, repo + "/" + model + "/1/deploy.so");
  if (!config.empty()) std::ofstream(repo + "/" + model + "/config.json") << config;
}

Input FromNpy(const std::string& name, const std::string& path) {
  Input in{name, {}, {}};
  auto t = LoadNpyFile(path);
  if (!t.ok()) return in;
  in.shape = t->shape();
  in.bytes.assign(static_cast<const char*>(t->data()), t->nbytes());
  return in;
}

// A model hetrt built for itself, exported for `device_type` (kDLCPU: host code
// only) into `path`; the build's error when it failed.
Status ExportBuilt(const Result<GraphBuilder::Built>& built, int32_t device_type, const std::string& path) {
  if (!built.ok()) return built.status();
  return kernels::ExportGraph(built->graph_json, built->params, std::vector<int32_t>{device_type}, path);
}

Environment& Env() {
  static Environment* env = [] {
    auto* e = new Environment();
    e->repo = "/tmp/hetrt_serve_bench_" + std::to_string(getpid());
    fs::remove_all(e->repo);
    const std::string fixtures = FixturesDir();
    const std::string mlp = fixtures + "/mlp/deploy.so", hetero = fixtures + "/hetero_opencl_seed/deploy.so";
    Link(e->repo, "mlp", mlp, "");
    Link(e->repo, "mlp_x2", mlp, R"({"instance_group": [{"count": 2}]})");
    e->libs["mlp"] = e->libs["mlp_x2"] = mlp;
    e->inputs["mlp"] = e->inputs["mlp_x2"] = {FromNpy("data", fixtures + "/mlp/inputs_data.npy")};
    // A model whose compute outweighs the protocol (~50 ms a run): what instances buy.
    const std::string resnet = fixtures + "/resnet18/deploy.so";
    Link(e->repo, "resnet18_x2", resnet, R"({"instance_group": [{"count": 2}]})");
    e->libs["resnet18_x2"] = resnet;
    e->inputs["resnet18_x2"] = {FromNpy("data", fixtures + "/resnet18/inputs_data.npy")};
    Link(e->repo, "hetero_x1", hetero, R"({"instance_group": [{"count": 1, "devices": ["cpu", "opencl"]}]})");
    Link(e->repo, "hetero_x2", hetero, R"({"instance_group": [{"count": 2, "devices": ["cpu", "opencl"]}]})");
    // The batch-4 model (rows independent), one-row requests.
    kernels::TwoBranchShape shape;
    shape.layers = 4;
    shape.rows = 4;
    shape.width = 256;
    auto built = kernels::BuildTwoBranchModel(kDLCPU, shape);
    const std::string batch4 = e->repo + "/batch4.so";
    fs::create_directories(e->repo);
    Status s = ExportBuilt(built, kDLCPU, batch4);
    if (!s.ok()) {
      e->error = s.message();
      return e;
    }
    Link(e->repo, "batch4_padded", batch4, R"({"max_batch_size": 4})");
    Link(e->repo, "batch4_batched", batch4,
         R"({"max_batch_size": 4, "dynamic_batching": {"max_queue_delay_microseconds": 2000}})");
    // CPU+OpenCL in two stages one after the other: one instance leaves each
    // device idle half the time, two keep both busy. Figures run it with the
    // devices on cores of their own (scripts/figures.sh: the process on one
    // core with one CPU thread per executor, PoCL's one worker pinned to
    // another), so one instance and two have the same hardware; the stages
    // are then about equal (~1.8 ms each here).
    const kernels::TwoStageShape stage = kernels::kServingTwoStageShape;
    const std::string two_stage = e->repo + "/two_stage.so";
    s = ExportBuilt(kernels::BuildTwoStageModel(kDLOpenCL, stage), kDLOpenCL, two_stage);
    if (!s.ok()) {
      e->error = s.message();
      return e;
    }
    Link(e->repo, "two_stage_x1", two_stage, R"({"instance_group": [{"count": 1, "devices": ["cpu", "opencl"]}]})");
    Link(e->repo, "two_stage_x2", two_stage, R"({"instance_group": [{"count": 2, "devices": ["cpu", "opencl"]}]})");
    // The same two instances with a CPU pool of their own of one thread
    // (config.json parameters): each instance's CPU stage runs on its own
    // thread and leaves the other core to the other instance's OpenCL stage. A
    // copy of the library: one file is loaded through one set of plugins.
    const std::string two_stage_own = e->repo + "/two_stage_own_cpu.so";
    fs::copy_file(two_stage, two_stage_own);
    Link(e->repo, "two_stage_x2_own_cpu", two_stage_own,
         R"({"instance_group": [{"count": 2, "devices": ["cpu", "opencl"]}],
             "parameters": {"cpu.num_threads": {"string_value": "1"}}})");
    Input stage_in{"data", {stage.rows, stage.width}, std::string(stage.rows * stage.width * sizeof(float), '\0')};
    for (int64_t i = 0; i < stage.rows * stage.width; ++i)
      reinterpret_cast<float*>(stage_in.bytes.data())[i] = std::cos(0.01f * static_cast<float>(i));
    e->inputs["two_stage_x1"] = e->inputs["two_stage_x2"] = e->inputs["two_stage_x2_own_cpu"] = {stage_in};
    e->libs["two_stage_x1"] = e->libs["two_stage_x2"] = two_stage;
    e->devices["two_stage_x1"] = {{kDLCPU, 0}, {kDLOpenCL, 0}};
    Input row{"data", {1, 256}, std::string(256 * sizeof(float), '\0')};
    for (int i = 0; i < 256; ++i)
      reinterpret_cast<float*>(row.bytes.data())[i] = std::sin(0.1f * static_cast<float>(i));
    e->inputs["batch4_padded"] = e->inputs["batch4_batched"] = {row};
    // A Relax model with a symbolic batch: one-row requests, one run each vs
    // concatenated along the batch axis (no padding). No queue delay (Triton's
    // default): the fixture's kernels cost the same per row at any batch (TVM's
    // unscheduled dense), so waiting for a fuller batch only idles the instance.
    const std::string relax = fixtures + "/../tvm-0.18-relax/relax_dyn_batch";
    Link(e->repo, "relax_dyn_unbatched", relax + "/deploy.so", "");
    Link(e->repo, "relax_dyn_batched", relax + "/deploy.so",
         R"({"max_batch_size": 16, "dynamic_batching": {"max_queue_delay_microseconds": 0}})");
    e->inputs["relax_dyn_unbatched"] = e->inputs["relax_dyn_batched"] = {
        FromNpy("data", relax + "/inputs_n1_data.npy")};
    e->inputs["hetero_x1"] = e->inputs["hetero_x2"] = {FromNpy("x", fixtures + "/hetero_opencl_seed/inputs_x.npy"),
                                                       FromNpy("y", fixtures + "/hetero_opencl_seed/inputs_y.npy")};
    auto server = serve::InferenceServer::Create({e->repo});
    if (!server.ok()) {
      e->error = server.status().message();
      return e;
    }
    e->server = std::move(server).value();
    if (!e->server->Ready()) {
      for (const auto& entry : e->server->Index(false))
        if (entry.state != "READY") e->error += entry.name + ": " + entry.reason + "; ";
      return e;
    }
    e->rest = serve::MakeRestFrontend(*e->server);
    e->grpc = serve::MakeGrpcFrontend(*e->server);
    auto rest_port = e->rest->Start("127.0.0.1", 0);
    auto grpc_port = e->grpc->Start("127.0.0.1", 0);
    if (!rest_port.ok() || !grpc_port.ok()) {
      e->error = !rest_port.ok() ? rest_port.status().message() : grpc_port.status().message();
      return e;
    }
    e->rest_port = *rest_port;
    e->grpc_port = *grpc_port;
    return e;
  }();
  return *env;
}

const std::vector<Input>& InputsOf(const std::string& model) { return Env().inputs.at(model); }

// Latencies of thread 0 become p50/p99 counters; every thread counts items.
class Latencies {
 public:
  void Add(Clock::duration d) { us_.push_back(std::chrono::duration<double, std::micro>(d).count()); }
  void Report(benchmark::State& state) {
    state.SetItemsProcessed(state.iterations());
    if (state.thread_index() != 0 || us_.empty()) return;
    std::sort(us_.begin(), us_.end());
    state.counters["p50_us"] = us_[us_.size() / 2];
    state.counters["p99_us"] = us_[std::min(us_.size() - 1, us_.size() * 99 / 100)];
  }

 private:
  std::vector<double> us_;
};

bool EnvReady(benchmark::State& state) {
  if (!Env().error.empty()) {
    state.SkipWithError(("serving environment: " + Env().error).c_str());
    return false;
  }
  return true;
}

// The floor: the executor called directly, one executor per thread (as the
// server's instances are), inputs set, run, output copied out.
void InProcess(benchmark::State& state, const std::string& model) {
  if (!EnvReady(state)) return;
  GraphExecutor::Options options;
  if (auto it = Env().devices.find(model); it != Env().devices.end()) options.devices = it->second;
  auto opened = OpenModel({Env().libs.at(model)}, options);
  if (!opened.ok()) return state.SkipWithError(opened.status().message().c_str());
  Executor& ex = *opened->executor;
  std::vector<std::pair<int, Tensor>> inputs;
  for (const Input& in : InputsOf(model)) {
    Tensor t = Tensor::EmptyHost(in.shape, {kDLFloat, 32, 1}).value();
    std::memcpy(t.data(), in.bytes.data(), in.bytes.size());
    inputs.emplace_back(ex.InputIndex(in.name), t);
  }
  Latencies latencies;
  for (auto _ : state) {
    const auto start = Clock::now();
    for (auto& [index, t] : inputs) (void)ex.SetInput(index, t);
    Status s = ex.Run();
    if (s.ok()) s = ex.Synchronize();
    auto out = ex.GetOutput(0);
    if (!s.ok() || !out.ok()) return state.SkipWithError("in-process run failed");
    benchmark::DoNotOptimize(out->data());
    latencies.Add(Clock::now() - start);
  }
  latencies.Report(state);
}

void Grpc(benchmark::State& state, const std::string& model) {
  if (!EnvReady(state)) return;
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  // A channel (connection) per client thread, as separate clients would have.
  args.SetInt("hetrt.bench.client", state.thread_index());
  auto channel = grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(Env().grpc_port),
                                           grpc::InsecureChannelCredentials(), args);
  auto stub = inference::GRPCInferenceService::NewStub(channel);
  inference::ModelInferRequest request;
  request.set_model_name(model);
  for (const Input& in : InputsOf(model)) {
    auto* tensor = request.add_inputs();
    tensor->set_name(in.name);
    tensor->set_datatype("FP32");
    for (int64_t d : in.shape) tensor->add_shape(d);
    request.add_raw_input_contents(in.bytes);
  }
  Latencies latencies;
  for (auto _ : state) {
    const auto start = Clock::now();
    grpc::ClientContext context;
    inference::ModelInferResponse response;
    grpc::Status status = stub->ModelInfer(&context, request, &response);
    if (!status.ok()) return state.SkipWithError(status.error_message().c_str());
    benchmark::DoNotOptimize(response.raw_output_contents(0).data());
    latencies.Add(Clock::now() - start);
  }
  latencies.Report(state);
}

// REST with the binary tensor extension (how Triton's HTTP client sends numpy arrays).
void RestBinary(benchmark::State& state, const std::string& model) {
  if (!EnvReady(state)) return;
  httplib::Client client("127.0.0.1", Env().rest_port);
  client.set_keep_alive(true);
  client.set_tcp_nodelay(true);  // headers and body are two writes: no Nagle wait for the ACK between them
  std::string header = R"({"inputs":[)", binary;
  bool first = true;
  for (const Input& in : InputsOf(model)) {
    std::string shape;
    for (int64_t d : in.shape) shape += (shape.empty() ? "" : ",") + std::to_string(d);
    header += std::string(first ? "" : ",") + R"({"name":")" + in.name + R"(","datatype":"FP32","shape":[)" + shape +
              R"(],"parameters":{"binary_data_size":)" + std::to_string(in.bytes.size()) + "}}";
    binary += in.bytes;
    first = false;
  }
  header += R"(],"outputs":[{"name":"output_0","parameters":{"binary_data":true}}]})";
  const std::string body = header + binary;
  const httplib::Headers headers{{"Inference-Header-Content-Length", std::to_string(header.size())}};
  const std::string path = "/v2/models/" + model + "/infer";
  Latencies latencies;
  for (auto _ : state) {
    const auto start = Clock::now();
    auto response = client.Post(path.c_str(), headers, body, "application/octet-stream");
    if (!response || response->status != 200) {
      const std::string why =
          response ? response->body : "REST request failed: " + httplib::to_string(response.error());
      return state.SkipWithError(why.c_str());
    }
    benchmark::DoNotOptimize(response->body.data());
    latencies.Add(Clock::now() - start);
  }
  latencies.Report(state);
}

void Register() {
  auto add = [](const std::string& name, void (*fn)(benchmark::State&, const std::string&), const std::string& model,
                std::vector<int> threads) {
    auto* b = benchmark::RegisterBenchmark(name.c_str(), [fn, model](benchmark::State& s) { fn(s, model); });
    b->UseRealTime()->Unit(benchmark::kMicrosecond);
    for (int t : threads) b->Threads(t);
  };
  // mlp: one instance, latency and throughput per path.
  add("Serve/mlp/InProcess", InProcess, "mlp", {1});
  add("Serve/mlp/Grpc", Grpc, "mlp", {1, 4, 16});
  add("Serve/mlp/RestBinary", RestBinary, "mlp", {1, 4, 16});
  // Two instances against two threads each running its own executor in process.
  add("Serve/mlp_x2/InProcess", InProcess, "mlp_x2", {2});
  add("Serve/mlp_x2/Grpc", Grpc, "mlp_x2", {16});
  add("Serve/mlp_x2/RestBinary", RestBinary, "mlp_x2", {16});
  add("Serve/resnet18_x2/InProcess", InProcess, "resnet18_x2", {2});
  add("Serve/resnet18_x2/Grpc", Grpc, "resnet18_x2", {16});
  // One-row requests on a batch-4 model: one request per run vs dynamic batching.
  add("Serve/batch4_padded/Grpc", Grpc, "batch4_padded", {16});
  add("Serve/batch4_batched/Grpc", Grpc, "batch4_batched", {16});
  // One-row requests on a Relax model whose batch is symbolic: unbatched vs batched.
  add("Serve/relax_dyn_unbatched/Grpc", Grpc, "relax_dyn_unbatched", {16});
  add("Serve/relax_dyn_batched/Grpc", Grpc, "relax_dyn_batched", {16});
  // CPU+OpenCL: one instance vs two (devices overlap across requests).
  add("Serve/hetero_x1/Grpc", Grpc, "hetero_x1", {4});
  add("Serve/hetero_x2/Grpc", Grpc, "hetero_x2", {4});
  // The same on a model whose devices take turns within a request (two stages):
  // two instances let one request's OpenCL stage run beside another's CPU stage.
  add("Serve/two_stage_x1/InProcess", InProcess, "two_stage_x1", {1, 2});
  add("Serve/two_stage_x1/Grpc", Grpc, "two_stage_x1", {4});
  add("Serve/two_stage_x2/Grpc", Grpc, "two_stage_x2", {4});
  add("Serve/two_stage_x2_own_cpu/Grpc", Grpc, "two_stage_x2_own_cpu", {4});
}

}  // namespace
}  // namespace hetrt

int main(int argc, char** argv) {
  hetrt::Register();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::filesystem::remove_all(hetrt::Env().repo);
  return 0;
}
