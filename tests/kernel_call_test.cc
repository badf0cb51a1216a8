// Calls TVM-compiled kernels directly (no graph executor): checks the backend
// C ABI wiring (last error, parallel launch, workspaces) on real libraries.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <dlfcn.h>

#include <fstream>

#include "hetrt/base/dtype.h"
#include "hetrt/module/library_module.h"
#include "hetrt/plugin_host/plugin_registry.h"
#include "test_support.h"

namespace hetrt {
namespace {

// Runs graph.json node by node with one host tensor per entry: an independent
// reference for the executor, written from the format notes only.
Result<std::vector<Tensor>> RunGraphByHand(Module& lib, const std::string& graph_path,
                                           const std::vector<NamedTensor>& bindings) {
  std::ifstream in(graph_path);
  const auto g = nlohmann::json::parse(in);
  const auto& nodes = g["nodes"];
  const auto row_ptr = g["node_row_ptr"].get<std::vector<int64_t>>();
  const auto shapes = g["attrs"]["shape"][1].get<std::vector<std::vector<int64_t>>>();
  const auto dtypes = g["attrs"]["dltype"][1].get<std::vector<std::string>>();
  std::vector<Tensor> entries(shapes.size());
  for (size_t e = 0; e < shapes.size(); ++e) {
    HETRT_ASSIGN_OR_RETURN(DLDataType t, ParseDataType(dtypes[e]));
    HETRT_ASSIGN_OR_RETURN(entries[e], Tensor::EmptyHost(shapes[e], t));
  }
  for (size_t nid = 0; nid < nodes.size(); ++nid) {
    const auto& node = nodes[nid];
    const std::string name = node["name"];
    if (node["op"] == "null") {
      const NamedTensor* b = FindParam(bindings, name);
      if (b == nullptr) return NotFound("no binding for input " + name);
      Tensor& dst = entries[static_cast<size_t>(row_ptr[nid])];
      if (b->tensor.nbytes() != dst.nbytes()) return InvalidArgument("size of " + name);
      std::memcpy(dst.data(), b->tensor.data(), dst.nbytes());
      continue;
    }
    std::vector<hetrt_value_t> values;
    std::vector<int32_t> codes;
    for (const auto& input : node["inputs"]) {
      const size_t eid = static_cast<size_t>(row_ptr[input[0].get<size_t>()] + input[1].get<int64_t>());
      values.push_back({.v_handle = entries[eid].dl()});
    }
    const int num_outputs = std::stoi(node["attrs"]["num_outputs"].get<std::string>());
    for (int k = 0; k < num_outputs; ++k)
      values.push_back({.v_handle = entries[static_cast<size_t>(row_ptr[nid] + k)].dl()});
    codes.assign(values.size(), HETRT_TYPE_DLTENSOR);
    const std::string func_name = node["attrs"]["func_name"];
    if (func_name == "__nop") continue;
    HETRT_ASSIGN_OR_RETURN(const PackedFunc* f, lib.GetFunction(func_name));
    if (f == nullptr) return NotFound(func_name);
    HETRT_RETURN_IF_ERROR(CallPackedFunc(*f, values.data(), codes.data(), static_cast<int32_t>(values.size())));
  }
  std::vector<Tensor> outputs;
  for (const auto& head : g["heads"])
    outputs.push_back(entries[static_cast<size_t>(row_ptr[head[0].get<size_t>()] + head[1].get<int64_t>())]);
  return outputs;
}

void CheckModelByHand(const std::string& model, double rtol, double atol) {
  const std::string dir = testing::TvmFixture(model);
  HETRT_ASSERT_OK_AND_ASSIGN(auto lib, LibraryModule::Open(dir + "/lib.so"));
  HETRT_ASSERT_OK_AND_ASSIGN(auto bindings, LoadParamDictFile(dir + "/inputs.params"));
  HETRT_ASSERT_OK_AND_ASSIGN(auto params, LoadParamDictFile(dir + "/params.params"));
  for (auto& p : params) bindings.push_back(p);
  HETRT_ASSERT_OK_AND_ASSIGN(auto expected, LoadParamDictFile(dir + "/outputs.params"));
  HETRT_ASSERT_OK_AND_ASSIGN(auto outputs, RunGraphByHand(*lib, dir + "/graph.json", bindings));
  ASSERT_EQ(outputs.size(), expected.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    const NamedTensor* e = FindParam(expected, "output_" + std::to_string(i));
    ASSERT_NE(e, nullptr);
    EXPECT_TRUE(testing::TensorsClose(outputs[i], e->tensor, rtol, atol)) << model << " output " << i;
  }
}

Plugin& CpuPlugin() {
  auto plugin = PluginRegistry::Global().ForDeviceType(kDLCPU);
  EXPECT_TRUE(plugin.ok()) << plugin.status().ToString();
  return **plugin;
}

TEST(KernelCall, Add3KernelsSumOnCpuTensors) {
  HETRT_REQUIRE_FIXTURE(dir, "add3");
  HETRT_ASSERT_OK_AND_ASSIGN(auto lib, LibraryModule::Open(dir + "/lib.so"));
  HETRT_ASSERT_OK_AND_ASSIGN(const PackedFunc* add, lib->GetFunction("tvmgen_default_fused_add"));
  ASSERT_NE(add, nullptr);
  const DLDataType f32{kDLFloat, 32, 1};
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor a, Tensor::EmptyHost({1, 10}, f32));
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor b, Tensor::EmptyHost({1, 10}, f32));
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor c, Tensor::EmptyHost({1, 10}, f32));
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor ab, Tensor::EmptyHost({1, 10}, f32));
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor out, Tensor::EmptyHost({1, 10}, f32));
  for (int i = 0; i < 10; ++i) {
    a.data_as<float>()[i] = static_cast<float>(i);
    b.data_as<float>()[i] = 0.5f * static_cast<float>(i);
    c.data_as<float>()[i] = -3.f;
  }
  hetrt_value_t args1[3] = {{.v_handle = a.dl()}, {.v_handle = b.dl()}, {.v_handle = ab.dl()}};
  hetrt_value_t args2[3] = {{.v_handle = ab.dl()}, {.v_handle = c.dl()}, {.v_handle = out.dl()}};
  int32_t codes[3] = {HETRT_TYPE_DLTENSOR, HETRT_TYPE_DLTENSOR, HETRT_TYPE_DLTENSOR};
  HETRT_ASSERT_OK(CallPackedFunc(*add, args1, codes, 3));
  HETRT_ASSERT_OK(CallPackedFunc(*add, args2, codes, 3));
  for (int i = 0; i < 10; ++i) EXPECT_FLOAT_EQ(out.data_as<float>()[i], 1.5f * i - 3.f);
}

TEST(KernelCall, KernelErrorsComeBackThroughTheLastErrorChannel) {
  HETRT_REQUIRE_FIXTURE(dir, "add3");
  HETRT_ASSERT_OK_AND_ASSIGN(auto lib, LibraryModule::Open(dir + "/lib.so"));
  HETRT_ASSERT_OK_AND_ASSIGN(const PackedFunc* add, lib->GetFunction("tvmgen_default_fused_add"));
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor a, Tensor::EmptyHost({1, 7}, {kDLFloat, 32, 1}));  // wrong shape
  hetrt_value_t args[3] = {{.v_handle = a.dl()}, {.v_handle = a.dl()}, {.v_handle = a.dl()}};
  int32_t codes[3] = {HETRT_TYPE_DLTENSOR, HETRT_TYPE_DLTENSOR, HETRT_TYPE_DLTENSOR};
  Status s = CallPackedFunc(*add, args, codes, 3);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("shape"), std::string::npos) << s.message();
  s = CallPackedFunc(*add, args, codes, 2);  // wrong argument count
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("num_args"), std::string::npos) << s.message();
}

TEST(KernelCall, BackendPointersAreFilledAfterLoad) {
  HETRT_REQUIRE_FIXTURE(dir, "resnet18");
  HETRT_ASSERT_OK_AND_ASSIGN(auto lib, LibraryModule::Open(dir + "/lib.so"));
  for (const char* name : {"__TVMAPISetLastError", "__TVMBackendAllocWorkspace", "__TVMBackendFreeWorkspace",
                           "__TVMBackendParallelLaunch"}) {
    void** slot = static_cast<void**>(lib->FindSymbol(name));
    ASSERT_NE(slot, nullptr) << name;
    // Each pointer holds the address of hetrt's exported function of the same name.
    EXPECT_EQ(*slot, dlsym(RTLD_DEFAULT, name + 2)) << name;
  }
}

TEST(KernelCall, MlpKernelsWithParallelLaunchMatchTvm) {
  HETRT_REQUIRE_FIXTURE(dir, "mlp");
  Plugin& cpu = CpuPlugin();
  for (const char* threads : {"1", "2", "3"}) {
    SCOPED_TRACE(std::string("threads=") + threads);
    HETRT_ASSERT_OK(cpu.SetOption("num_threads", threads));
    CheckModelByHand("mlp", 1e-5, 1e-6);
  }
}

TEST(KernelCall, Resnet18KernelsWithWorkspacesMatchTvm) {
  HETRT_REQUIRE_FIXTURE(dir, "resnet18");
  CheckModelByHand("resnet18", 1e-5, 1e-5);
}

TEST(KernelCall, Chain200WithZeroDimensionalParamsMatchesTvm) {
  HETRT_REQUIRE_FIXTURE(dir, "chain200");
  CheckModelByHand("chain200", 1e-5, 1e-6);
}

}  // namespace
}  // namespace hetrt
