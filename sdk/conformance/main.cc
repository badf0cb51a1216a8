// hetrt-conformance PLUGIN.so [--device TYPE:INDEX] [--profile FILE] [gtest flags]
//
// Loads one plugin with the core's loader and runs the conformance checks
// (GoogleTest) against it: ABI negotiation, devices, memory, copies, streams
// and events, instances, modules, threads and errors. A check the plugin does
// not declare the feature for is skipped with the reason, and so is one its
// profile (profile.h) says it does not support. Ends with a table of every
// check; exits non-zero when one failed or the plugin could not be loaded.
//
// A device the plugin cannot find skips the device checks with the reason,
// unless HETRT_REQUIRE names its type ("opencl,vulkan"; "all": every type but
// cuda, which a machine without a GPU lacks): then the run fails, naming it.
#include <limits.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "conformance.h"
#include "hetrt/base/dtype.h"
#include "hetrt/base/required.h"

namespace hetrt::conformance {

// Never destroyed: the plugin stays loaded until the process ends, not torn
// down by exit handlers. A driver half torn down by then (lavapipe) crashes,
// and one unloaded before exit leaves its own one-time allocations to
// LeakSanitizer with no module to name. Every other instance the checks make
// is destroyed, and leak-checked, before that.
Context& Ctx() {
  static Context& context = *new Context;
  return context;
}

namespace {
void ApplyTo(Plugin& plugin, const Profile::Options& options) {
  for (const auto& [key, value] : options) {
    const Status set = plugin.SetOption(key, value);
    EXPECT_TRUE(set.ok()) << key << "=" << value << ": " << set.message();
  }
}
}  // namespace

std::unique_ptr<PluginRegistry> AnotherRegistry() {
  PluginRegistry::Options options;
  options.search_paths = {Ctx().plugin_path};
  auto registry = PluginRegistry::Discover(options);
  for (const auto& plugin : registry->plugins()) ApplyTo(*plugin, Ctx().profile.options);
  return registry;
}

void Apply(const Profile::Options& options) { ApplyTo(*Ctx().plugin, options); }

uint64_t GuaranteedAlignment() {
  auto reported = Ctx().plugin->AttributeInt(Ctx().device, HETRT_DEVICE_ATTR_MAX_ALIGNMENT);
  return reported.ok() && *reported > 0 ? static_cast<uint64_t>(*reported) : 256;
}

namespace {

// HETRT_REQUIRE's rule for the device under test (see the top of this file).
bool DeviceRequired(const std::string& type) {
  return ListRequires(RequiredList(), type, /*all_includes_it=*/type != "cuda");
}

// The problems a backend's driver reported (the profile's problems-attribute):
// a check during which they rose fails.
int64_t DriverProblems() {
  const Context& ctx = Ctx();
  if (!ctx.profile.problems_attribute || !ctx.has_device) return 0;
  auto n = ctx.plugin->AttributeInt(ctx.device, *ctx.profile.problems_attribute);
  return n.ok() ? *n : 0;
}

// Records each check's outcome and the reason for a skip or the first failure.
class TableListener : public ::testing::EmptyTestEventListener {
 public:
  struct Row {
    std::string check, outcome, detail;
  };
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!detail_.empty()) return;
    std::string text = result.message() ? result.message() : "";
    if (result.failed() && result.file_name())
      text = std::string(Basename(result.file_name())) + ":" + std::to_string(result.line_number()) + ": " + text;
    detail_ = OneLine(text);
  }
  void OnTestStart(const ::testing::TestInfo&) override { problems_before_ = DriverProblems(); }
  void OnTestEnd(const ::testing::TestInfo& info) override {
    const ::testing::TestResult* r = info.result();
    const char* outcome = r->Failed() ? "FAILED" : r->Skipped() ? "skipped" : "passed";
    if (const int64_t problems = DriverProblems() - problems_before_; problems > 0) {
      outcome = "FAILED";
      detail_ = "the driver reported " + std::to_string(problems) + " problem(s) during the check (see stderr)";
      driver_problems_ = true;
    }
    rows_.push_back({std::string(info.test_suite_name()) + "." + info.name(), outcome,
                     r->Passed() && !r->Skipped() && detail_.empty() ? "" : detail_});
    detail_.clear();
  }
  // A check the profile leaves out, with its reason.
  void Unsupported(const std::string& check, const std::string& reason) {
    rows_.push_back({check, "skipped", "unsupported: " + reason});
  }
  bool driver_problems() const { return driver_problems_; }
  void Print(const std::string& plugin) const {
    size_t width = 5;
    for (const Row& row : rows_) width = std::max(width, row.check.size());
    std::printf("\nhetrt conformance: %s\n", plugin.c_str());
    std::printf("%-*s  %-7s  %s\n", static_cast<int>(width), "check", "result", "reason");
    int counts[3] = {0, 0, 0};
    for (const Row& row : rows_) {
      std::printf("%-*s  %-7s  %s\n", static_cast<int>(width), row.check.c_str(), row.outcome.c_str(),
                  row.detail.c_str());
      ++counts[row.outcome == "passed" ? 0 : row.outcome == "skipped" ? 1 : 2];
    }
    std::printf("%d passed, %d skipped, %d failed\n", counts[0], counts[1], counts[2]);
  }

 private:
  static const char* Basename(const char* path) {
    const char* slash = std::strrchr(path, '/');
    return slash ? slash + 1 : path;
  }
  static std::string OneLine(std::string text) {
    for (char& c : text)
      if (c == '\n') c = ' ';
    constexpr size_t kMax = 160;
    if (text.size() > kMax) text = text.substr(0, kMax - 3) + "...";
    return text;
  }
  std::string detail_;
  std::vector<Row> rows_;
  int64_t problems_before_ = 0;
  bool driver_problems_ = false;
};

// Leaves out the checks the profile says the backend does not support: a
// negative gtest filter, and a row with the reason for each.
void LeaveOutUnsupported(TableListener& table) {
  const ::testing::UnitTest& unit = *::testing::UnitTest::GetInstance();
  std::string excluded;
  for (int i = 0; i < unit.total_test_suite_count(); ++i) {
    const ::testing::TestSuite& suite = *unit.GetTestSuite(i);
    for (int j = 0; j < suite.total_test_count(); ++j) {
      const std::string name = std::string(suite.name()) + "." + suite.GetTestInfo(j)->name();
      if (auto reason = Ctx().profile.Unsupported(name)) {
        table.Unsupported(name, *reason);
        excluded += ":" + name;
      }
    }
  }
  if (excluded.empty()) return;
  std::string& filter = ::testing::GTEST_FLAG(filter);  // "POSITIVE[-NEGATIVE]"
  filter += filter.find('-') == std::string::npos ? "-" + excluded.substr(1) : excluded;
}

std::string ExecutableDir() {
  char path[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) return ".";
  path[n] = '\0';
  std::string dir(path);
  return dir.substr(0, dir.rfind('/'));
}

int Usage(const char* why) {
  std::fprintf(stderr,
               "hetrt-conformance: %s\n"
               "usage: hetrt-conformance PLUGIN.so [--device TYPE:INDEX] [--profile FILE]\n"
               "                         [gtest flags, e.g. --gtest_filter=Copies.*]\n",
               why);
  return 2;
}

// Loads the plugin and picks the device under test: --device, else device 0
// of the first device type the plugin declares.
int Setup(const std::string& path, const std::string& device_text, const std::string& profile_path) {
  Context& ctx = Ctx();
  ctx.plugin_path = path;
  if (!profile_path.empty()) {
    auto profile = ReadProfile(profile_path);
    if (!profile.ok()) {
      std::fprintf(stderr, "hetrt-conformance: %s\n", profile.status().message().c_str());
      return 2;
    }
    ctx.profile = std::move(profile).value();
  }
  const char* shim = std::getenv("HETRT_CONFORMANCE_SHIM");
  ctx.shim_path = shim ? shim : ExecutableDir() + "/" HETRT_CONFORMANCE_SHIM_FROM_BIN;
  PluginRegistry::Options options;
  options.search_paths = {path};
  ctx.registry = PluginRegistry::Discover(options);
  for (const PluginProblem& p : ctx.registry->problems())
    std::fprintf(stderr, "hetrt-conformance: %s: %s\n", p.path.c_str(), p.reason.c_str());
  if (ctx.registry->plugins().size() != 1) {
    std::fprintf(stderr, "hetrt-conformance: the core's loader did not load %s as a plugin (above: why)\n",
                 path.c_str());
    return 1;
  }
  ctx.plugin = ctx.registry->plugins()[0].get();
  for (const auto& [key, value] : ctx.profile.options) {
    if (const Status set = ctx.plugin->SetOption(key, value); !set.ok()) {
      std::fprintf(stderr, "hetrt-conformance: the profile's option %s=%s: %s\n", key.c_str(), value.c_str(),
                   set.message().c_str());
      return 1;
    }
  }
  const std::vector<int32_t> types = ctx.plugin->device_types();
  if (!device_text.empty()) {
    auto parsed = ParseDevice(device_text);
    if (!parsed.ok()) return Usage(parsed.status().message().c_str());
    ctx.device = parsed.value();
  } else if (!types.empty()) {
    ctx.device = DLDevice{static_cast<DLDeviceType>(types[0]), 0};
  }
  if (types.empty()) {
    ctx.no_device_reason = "the plugin declares no device types";
  } else if (!ctx.plugin->ServesDeviceType(ctx.device.device_type)) {
    ctx.no_device_reason = "the plugin does not declare device type " + DeviceTypeName(ctx.device.device_type);
  } else if (auto count = ctx.plugin->CountDevices(ctx.device.device_type); !count.ok()) {
    ctx.no_device_reason = "device_count failed: " + count.status().message();
  } else if (ctx.device.device_id < 0 || ctx.device.device_id >= count->count) {
    ctx.no_device_reason =
        count->count == 0 ? "no " + DeviceTypeName(ctx.device.device_type) + " device: " + count->unavailable_reason
                          : "no device " + DeviceToString(ctx.device) + " (" + std::to_string(count->count) + " found)";
  } else {
    ctx.has_device = true;
  }
  std::printf("plugin %s %s (%s), ABI %s; device under test: %s%s%s\n", ctx.plugin->name().c_str(),
              ctx.plugin->version().c_str(), path.c_str(), ctx.plugin->abi_version().c_str(),
              ctx.has_device ? DeviceToString(ctx.device).c_str() : ("none (" + ctx.no_device_reason + ")").c_str(),
              ctx.profile.path.empty() ? "" : "; profile ", ctx.profile.path.c_str());
  const std::string type = types.empty() ? "" : DeviceTypeName(ctx.device.device_type);
  if (!ctx.has_device && !types.empty() && DeviceRequired(type)) {
    std::fprintf(stderr, "hetrt-conformance: %s is required (HETRT_REQUIRE=%s) but missing: %s\n", type.c_str(),
                 RequiredList().c_str(), ctx.no_device_reason.c_str());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace hetrt::conformance

int main(int argc, char** argv) {
  using namespace hetrt::conformance;
  ::testing::InitGoogleTest(&argc, argv);  // takes the gtest flags out of argv
  std::string plugin, device, profile;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--device" && i + 1 < argc) {
      device = argv[++i];
    } else if (arg.rfind("--device=", 0) == 0) {
      device = arg.substr(9);
    } else if (arg == "--profile" && i + 1 < argc) {
      profile = argv[++i];
    } else if (arg.rfind("--profile=", 0) == 0) {
      profile = arg.substr(10);
    } else if (arg == "-h" || arg == "--help") {
      Usage("checks a hetrt plugin");
      return 0;
    } else if (!arg.empty() && arg[0] == '-') {
      return Usage(("unknown option " + arg).c_str());
    } else if (plugin.empty()) {
      plugin = arg;
    } else {
      return Usage("one plugin at a time");
    }
  }
  if (plugin.empty()) return Usage("no plugin given");
  if (int rc = Setup(plugin, device, profile); rc != 0) return rc;
  auto* table = new TableListener;  // owned by gtest's listener list
  ::testing::UnitTest::GetInstance()->listeners().Append(table);
  LeaveOutUnsupported(*table);
  int rc = RUN_ALL_TESTS();
  if (table->driver_problems()) rc = 1;
  table->Print(Ctx().plugin->name() + " " + Ctx().plugin->version() + " (" + plugin + ")");
  return rc;
}
