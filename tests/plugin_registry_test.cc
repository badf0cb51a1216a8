#include <gtest/gtest.h>

#include "hetrt/exec/graph_model.h"
#include "hetrt/module/module_loader.h"
#include "hetrt/plugin_host/plugin_registry.h"
#include "test_support.h"

namespace hetrt {
namespace {

std::unique_ptr<PluginRegistry> RegistryOf(const std::string& variant) {
  PluginRegistry::Options options;
  options.search_paths = {std::string(HETRT_TEST_PLUGINS_DIR) + "/" + variant};
  return PluginRegistry::Discover(options);
}

// A blob with a plugin-loaded module: a host library that imports one
// "hetrt_test" module (the test plugin reports how much of it it read).
Result<std::shared_ptr<Module>> LoadTestTree(PluginRegistry& registry) {
  ByteWriter w;
  w.WriteU64(3);
  w.WriteString("_lib");
  w.WriteString("hetrt_test");
  w.WriteString("payload");  // u64 7 + bytes: what the test plugin reads
  w.WriteString("_import_tree");
  for (uint64_t v : {3, 0, 1, 1, 1, 1}) w.WriteU64(v);  // row_ptr [0,1,1], children [1]
  struct Lib final : Module {
    Lib() : Module("library") {}
    Result<const PackedFunc*> GetOwnFunction(std::string_view) override {
      return static_cast<const PackedFunc*>(nullptr);
    }
  };
  LoadOptions options;
  options.plugins = &registry;
  return LoadModuleTreeFromBlob(w.bytes(), std::make_shared<Lib>(), "blob", options);
}

TEST(PluginRegistry, WrongAbiMajorIsRefusedNamingBothVersions) {
  // An ABI 1.x plugin (built before streams and instances) and one from a future major.
  for (const auto& [variant, claimed] : {std::pair{"abi_major_1", "1.1"}, std::pair{"abi_major_3", "3.0"}}) {
    auto registry = RegistryOf(variant);
    EXPECT_TRUE(registry->plugins().empty());
    ASSERT_EQ(registry->problems().size(), 1u);
    const std::string& reason = registry->problems()[0].reason;
    EXPECT_NE(reason.find(std::string("plugin ABI version ") + claimed), std::string::npos) << reason;
    EXPECT_NE(reason.find("hetrt's ABI version " + std::to_string(HETRT_PLUGIN_ABI_MAJOR) + "." +
                          std::to_string(HETRT_PLUGIN_ABI_MINOR)),
              std::string::npos)
        << reason;
  }
}

int64_t LiveInstances(PluginRegistry& registry) {
  auto plugin = registry.ForTypeKey("hetrt_test");
  if (!plugin.ok()) return -1;
  LoadOptions options;
  options.plugins = &registry;
  const PackedFunc* f = GlobalFunctionRegistry::Get().Find("__hetrt_test_live_instances");
  if (f == nullptr) return -1;
  hetrt_value_t ret{};
  int32_t ret_code = 0;
  if (!CallPackedFunc(*f, nullptr, nullptr, 0, &ret, &ret_code).ok()) return -1;
  return ret.v_int64;
}

// Each registry holds its own instance of a plugin, destroyed with it.
TEST(PluginRegistry, TwoRegistriesHoldTwoInstances) {
  auto first = RegistryOf("abi_minor_9");
  ASSERT_EQ(first->plugins().size(), 1u) << first->DescribeSearch();
  const int64_t base = LiveInstances(*first);
  ASSERT_GE(base, 1);
  {
    auto second = RegistryOf("abi_minor_9");
    ASSERT_EQ(second->plugins().size(), 1u);
    EXPECT_NE(second->plugins()[0]->instance(), first->plugins()[0]->instance());
    EXPECT_EQ(LiveInstances(*first), base + 1);
  }
  EXPECT_EQ(LiveInstances(*first), base);
}

TEST(PluginRegistry, NewerMinorIsAccepted) {
  auto registry = RegistryOf("abi_minor_9");
  ASSERT_EQ(registry->plugins().size(), 1u) << registry->DescribeSearch();
  EXPECT_EQ(registry->plugins()[0]->name(), "test");
  EXPECT_EQ(registry->plugins()[0]->api()->abi_minor, 9);
  EXPECT_TRUE(registry->ForTypeKey("hetrt_test").ok());
}

TEST(PluginRegistry, LibraryWithoutEntrySymbolIsReported) {
  auto registry = RegistryOf("no_entry");
  EXPECT_TRUE(registry->plugins().empty());
  ASSERT_EQ(registry->problems().size(), 1u);
  EXPECT_NE(registry->problems()[0].reason.find("hetrt_plugin_get_api"), std::string::npos);
}

TEST(PluginRegistry, MissingFolderIsReported) {
  PluginRegistry::Options options;
  options.search_paths = {"/no/such/plugin/folder"};
  auto registry = PluginRegistry::Discover(options);
  ASSERT_EQ(registry->problems().size(), 1u);
  EXPECT_EQ(registry->problems()[0].path, "/no/such/plugin/folder");
  EXPECT_NE(registry->problems()[0].reason.find("does not exist"), std::string::npos);
  auto missing = registry->ForDeviceType(kDLCUDA);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no plugin provides device type cuda"), std::string::npos);
  EXPECT_NE(missing.status().message().find("/no/such/plugin/folder"), std::string::npos);
}

TEST(PluginRegistry, UnknownTypeKeyErrorNamesSearchAndPluginsFound) {
  auto registry = RegistryOf("abi_minor_9");
  auto r = registry->ForTypeKey("vulkan");
  ASSERT_FALSE(r.ok());
  const std::string& m = r.status().message();
  EXPECT_NE(m.find("no plugin provides type_key 'vulkan'"), std::string::npos) << m;
  EXPECT_NE(m.find("abi_minor_9"), std::string::npos) << m;
  EXPECT_NE(m.find("test 0.0.1"), std::string::npos) << m;
}

TEST(PluginRegistry, PluginErrorsBecomeStatusesNamingThePlugin) {
  auto registry = RegistryOf("abi_minor_9");
  ASSERT_EQ(registry->plugins().size(), 1u);
  Status s = registry->plugins()[0]->SetOption("num_threads", "2");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "plugin 'test': test plugin takes no options");
}

TEST(PluginRegistry, HetrtPluginPathComesFirstInTheDefaultSearch) {
  ::setenv("HETRT_PLUGIN_PATH", "/first:/second", 1);
  auto paths = PluginRegistry::DefaultSearchPaths();
  ::unsetenv("HETRT_PLUGIN_PATH");
  ASSERT_GE(paths.size(), 3u);
  EXPECT_EQ(paths[0], "/first");
  EXPECT_EQ(paths[1], "/second");
  EXPECT_NE(paths[2].find("hetrt-plugins"), std::string::npos);
}

// A blob with a plugin-loaded module: the plugin reports how much it read, the
// tree is rebuilt, and GetFuncFromEnv finds imports first, then globals.
TEST(PluginModule, LoadsFromABlobAndResolvesThroughTheEnvironment) {
  auto registry = RegistryOf("abi_minor_9");
  HETRT_ASSERT_OK_AND_ASSIGN(auto root, LoadTestTree(*registry));
  ASSERT_EQ(root->imports().size(), 1u);
  EXPECT_EQ(root->imports()[0]->type_key(), "hetrt_test");
  EXPECT_EQ(root->imports()[0]->ListFunctionNames(), std::vector<std::string>{"test_add_one"});

  HETRT_ASSERT_OK_AND_ASSIGN(const PackedFunc* add, root->GetFunctionFromEnv("test_add_one"));
  hetrt_value_t arg{.v_int64 = 41}, ret{};
  int32_t code = HETRT_TYPE_INT, ret_code = 0;
  HETRT_ASSERT_OK(CallPackedFunc(*add, &arg, &code, 1, &ret, &ret_code));
  EXPECT_EQ(ret.v_int64, 42);
  // Failures inside the plugin come back with the plugin's message.
  code = HETRT_TYPE_FLOAT;
  Status failed = CallPackedFunc(*add, &arg, &code, 1, &ret, &ret_code);
  EXPECT_EQ(failed.message(), "add_one takes one int");

  HETRT_ASSERT_OK_AND_ASSIGN(const PackedFunc* global, root->GetFunctionFromEnv("__hetrt_test_answer"));
  ASSERT_NE(global, nullptr);
  auto missing = root->GetFunctionFromEnv("nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("'nope' not found in the imports of module 'library'"), std::string::npos)
      << missing.status().message();
}

}  // namespace
}  // namespace hetrt

namespace hetrt {
namespace {

// Tensors and modules keep the plugin that made them alive: a registry may go
// before them (run under ASan in CI, which catches any use after free).
TEST(PluginOwnership, TensorsAndModulesOutliveTheirRegistry) {
  PluginRegistry::Options options;
  options.search_paths = PluginRegistry::DefaultSearchPaths();
  auto registry = PluginRegistry::Discover(options);
  auto cpu = registry->ForDevice({kDLCPU, 0});
  if (!cpu.ok()) GTEST_SKIP() << cpu.status().message();
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor host,
                             Tensor::Empty({256}, {kDLFloat, 32, 1}, (*cpu)->DeviceAllocator({kDLCPU, 0})));
  Tensor on_device;
  if (auto cl = registry->ForDevice({kDLOpenCL, 0}); cl.ok()) {
    HETRT_ASSERT_OK_AND_ASSIGN(on_device,
                               Tensor::Empty({256}, {kDLFloat, 32, 1}, (*cl)->DeviceAllocator({kDLOpenCL, 0})));
  }
  // A module loaded by a plugin of this registry.
  auto test_registry = RegistryOf("abi_minor_9");
  HETRT_ASSERT_OK_AND_ASSIGN(auto module, LoadTestTree(*test_registry));
  std::weak_ptr<Plugin> test_plugin = test_registry->plugins()[0];
  registry.reset();
  test_registry.reset();
  // Everything still works on memory and modules of the destroyed registries.
  for (int i = 0; i < 256; ++i) host.data_as<float>()[i] = static_cast<float>(i);
  EXPECT_EQ(host.data_as<float>()[255], 255.f);
  EXPECT_FALSE(test_plugin.expired());
  HETRT_ASSERT_OK_AND_ASSIGN(const PackedFunc* add, module->GetFunction("test_add_one"));
  ASSERT_NE(add, nullptr);
  hetrt_value_t arg{.v_int64 = 1}, ret{};
  int32_t code = HETRT_TYPE_INT, ret_code = 0;
  HETRT_ASSERT_OK(CallPackedFunc(*add, &arg, &code, 1, &ret, &ret_code));
  EXPECT_EQ(ret.v_int64, 2);
  module.reset();
  host = Tensor();
  on_device = Tensor();
}

// Compiled code run by an executor reaches the plugins of the executor's
// registry: here its parallel loops go to the test plugin's counting pool.
TEST(PluginOwnership, CompiledCodeReachesTheExecutorsRegistry) {
  HETRT_REQUIRE_FIXTURE(dir, "mlp");
  PluginRegistry::Options options;
  options.search_paths = {std::string(HETRT_TEST_PLUGINS_DIR) + "/abi_minor_9"};
  for (const auto& p : PluginRegistry::DefaultSearchPaths()) options.search_paths.push_back(p);
  auto registry = PluginRegistry::Discover(options);
  ASSERT_NE(registry->ParallelPlugin(), nullptr);
  ASSERT_EQ(registry->ParallelPlugin()->name(), "test");
  GraphExecutor::Options ex_options;
  ex_options.plugins = registry.get();
  HETRT_ASSERT_OK_AND_ASSIGN(GraphModel m, OpenGraphModel({dir + "/deploy.so"}, ex_options));
  HETRT_ASSERT_OK_AND_ASSIGN(auto inputs, LoadParamDictFile(dir + "/inputs.params"));
  for (const auto& p : inputs) HETRT_ASSERT_OK(m.executor->SetInput(p.name, p.tensor));
  const PackedFunc* count = GlobalFunctionRegistry::Get().Find("__hetrt_test_parallel_launches");
  ASSERT_NE(count, nullptr);
  hetrt_value_t ret{};
  int32_t ret_code = 0;
  HETRT_ASSERT_OK(CallPackedFunc(*count, nullptr, nullptr, 0, &ret, &ret_code));
  const int64_t before = ret.v_int64;
  HETRT_ASSERT_OK(m.executor->Run());
  HETRT_ASSERT_OK(CallPackedFunc(*count, nullptr, nullptr, 0, &ret, &ret_code));
  EXPECT_GT(ret.v_int64, before) << "mlp's parallel loops did not reach the executor's registry";
  // And the outputs are still right with the serial pool.
  HETRT_ASSERT_OK_AND_ASSIGN(auto expected, LoadParamDictFile(dir + "/outputs.params"));
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor out, m.executor->GetOutput(0));
  EXPECT_TRUE(testing::TensorsClose(out, expected[0].tensor, 1e-5, 1e-5));
}

}  // namespace
}  // namespace hetrt
