// ABI negotiation: the plugin's own table, as the core's loader reads it under
// the version it claims, and under other versions (through the ABI shim).
#include <dlfcn.h>

#include <cstddef>

#include "conformance.h"

namespace hetrt::conformance {
namespace {

constexpr size_t kTable20Size = offsetof(hetrt_plugin_api_t, parallel) + sizeof(void*);

using ConfigureShim = int (*)(const hetrt_plugin_api_t*, uint16_t, uint16_t, size_t);

// Loads the plugin's table through the shim, claiming (major, minor) with
// struct_size bytes, and returns the registry the core's loader made of it.
std::unique_ptr<PluginRegistry> LoadAs(uint16_t major, uint16_t minor, size_t struct_size, std::string* skip) {
  const Context& ctx = Ctx();
  void* shim = dlopen(ctx.shim_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (shim == nullptr) {
    *skip = "the ABI shim is missing (" + ctx.shim_path + "; set HETRT_CONFORMANCE_SHIM): " + dlerror();
    return nullptr;
  }
  auto configure = reinterpret_cast<ConfigureShim>(dlsym(shim, "hetrt_conformance_shim_configure"));
  if (configure == nullptr || configure(ctx.plugin->api(), major, minor, struct_size) != 0) {
    *skip = "the ABI shim at " + ctx.shim_path + " cannot be configured";
    dlclose(shim);
    return nullptr;
  }
  PluginRegistry::Options options;
  options.search_paths = {ctx.shim_path};
  auto registry = PluginRegistry::Discover(options);
  dlclose(shim);  // the registry holds its own reference
  return registry;
}

std::string Problems(const PluginRegistry& registry) {
  std::string all;
  for (const PluginProblem& p : registry.problems()) all += p.reason + "; ";
  return all;
}

// The loaded shim instance answers a real call, so the table is usable.
void ExpectUsable(const PluginRegistry& registry) {
  ASSERT_EQ(registry.plugins().size(), 1u) << Problems(registry);
  Plugin* p = registry.plugins()[0].get();
  EXPECT_EQ(p->name(), Ctx().plugin->name());
  for (int32_t type : p->device_types()) {
    auto count = p->CountDevices(type);
    EXPECT_TRUE(count.ok()) << count.status().message();
  }
}

TEST(Abi, LoadsThroughTheCoreLoader) {
  const hetrt_plugin_api_t* api = Ctx().plugin->api();
  EXPECT_EQ(api->abi_major, HETRT_PLUGIN_ABI_MAJOR);
  EXPECT_GE(api->struct_size, kTable20Size);
  EXPECT_FALSE(Ctx().plugin->name().empty());
  ASSERT_NE(api->version, nullptr);
  EXPECT_GT(std::string(api->version).size(), 0u) << "the plugin's version string is empty";
  EXPECT_NE(api->instance_destroy, nullptr) << "instances could never be released";
  EXPECT_EQ(api->num_device_types > 0, api->device != nullptr) << "device types and the device table go together";
  EXPECT_EQ(api->num_type_keys > 0, api->module != nullptr) << "type_keys and the module table go together";
  if (api->device) {
    EXPECT_GE(api->device->struct_size, offsetof(hetrt_device_api_t, set_device) + sizeof(void*));
  }
  if (api->module) {
    EXPECT_GE(api->module->struct_size, offsetof(hetrt_module_api_t, destroy) + sizeof(void*));
  }
}

TEST(Abi, OldestMinorTableIsAccepted) {
  std::string skip;
  auto registry = LoadAs(HETRT_PLUGIN_ABI_MAJOR, 0, kTable20Size, &skip);
  if (!registry) GTEST_SKIP() << skip;
  ExpectUsable(*registry);
}

TEST(Abi, NewerMinorWithAppendedFieldsIsAccepted) {
  std::string skip;
  // A later minor appends fields the core does not know: it must read only
  // what it knows and ignore the rest.
  auto registry = LoadAs(HETRT_PLUGIN_ABI_MAJOR, HETRT_PLUGIN_ABI_MINOR + 1, sizeof(hetrt_plugin_api_t) + 256, &skip);
  if (!registry) GTEST_SKIP() << skip;
  ExpectUsable(*registry);
}

TEST(Abi, WrongMajorIsRefusedNamingBothVersions) {
  for (uint16_t major : {uint16_t{HETRT_PLUGIN_ABI_MAJOR - 1}, uint16_t{HETRT_PLUGIN_ABI_MAJOR + 1}}) {
    SCOPED_TRACE("claimed major " + std::to_string(major));
    std::string skip;
    auto registry = LoadAs(major, 7, sizeof(hetrt_plugin_api_t), &skip);
    if (!registry) GTEST_SKIP() << skip;
    EXPECT_TRUE(registry->plugins().empty()) << "a plugin of ABI major " << major << " was loaded";
    const std::string why = Problems(*registry);
    const std::string theirs = std::to_string(major) + ".7";
    const std::string ours = std::to_string(HETRT_PLUGIN_ABI_MAJOR) + "." + std::to_string(HETRT_PLUGIN_ABI_MINOR);
    EXPECT_NE(why.find(theirs), std::string::npos) << why;
    EXPECT_NE(why.find(ours), std::string::npos) << why;
  }
}

TEST(Abi, TableSmallerThanItsMinorIsRefused) {
  std::string skip;
  auto registry = LoadAs(HETRT_PLUGIN_ABI_MAJOR, HETRT_PLUGIN_ABI_MINOR, offsetof(hetrt_plugin_api_t, device), &skip);
  if (!registry) GTEST_SKIP() << skip;
  EXPECT_TRUE(registry->plugins().empty());
  EXPECT_FALSE(registry->problems().empty());
}

}  // namespace
}  // namespace hetrt::conformance
