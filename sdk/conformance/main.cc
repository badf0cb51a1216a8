// hetrt-conformance PLUGIN.so [--device TYPE:INDEX] [gtest flags]
//
// Loads one plugin with the core's loader and runs the conformance checks
// (GoogleTest) against it: ABI negotiation, devices, memory, copies, streams
// and events, modules, threads and errors. A check the plugin does not declare
// the feature for is skipped with the reason. Ends with a table of every check;
// exits non-zero when one failed or the plugin could not be loaded.
#include <limits.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "conformance.h"
#include "hetrt/base/dtype.h"

namespace hetrt::conformance {

Context& Ctx() {
  static Context context;
  return context;
}

namespace {

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
  void OnTestEnd(const ::testing::TestInfo& info) override {
    const ::testing::TestResult* r = info.result();
    const char* outcome = r->Failed() ? "FAILED" : r->Skipped() ? "skipped" : "passed";
    rows_.push_back({std::string(info.test_suite_name()) + "." + info.name(), outcome,
                     r->Passed() && !r->Skipped() ? "" : detail_});
    detail_.clear();
  }
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
};

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
               "usage: hetrt-conformance PLUGIN.so [--device TYPE:INDEX] [gtest flags, e.g. --gtest_filter=Copies.*]\n",
               why);
  return 2;
}

// Loads the plugin and picks the device under test: --device, else device 0
// of the first device type the plugin declares.
int Setup(const std::string& path, const std::string& device_text) {
  Context& ctx = Ctx();
  ctx.plugin_path = path;
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
  std::printf("plugin %s %s (%s), ABI %d.%d; device under test: %s\n", ctx.plugin->name().c_str(),
              ctx.plugin->version().c_str(), path.c_str(), ctx.plugin->api()->abi_major, ctx.plugin->api()->abi_minor,
              ctx.has_device ? DeviceToString(ctx.device).c_str() : ("none (" + ctx.no_device_reason + ")").c_str());
  return 0;
}

}  // namespace
}  // namespace hetrt::conformance

int main(int argc, char** argv) {
  using namespace hetrt::conformance;
  ::testing::InitGoogleTest(&argc, argv);  // takes the gtest flags out of argv
  std::string plugin, device;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--device" && i + 1 < argc) {
      device = argv[++i];
    } else if (arg.rfind("--device=", 0) == 0) {
      device = arg.substr(9);
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
  if (int rc = Setup(plugin, device); rc != 0) return rc;
  auto* table = new TableListener;  // owned by gtest's listener list
  ::testing::UnitTest::GetInstance()->listeners().Append(table);
  const int rc = RUN_ALL_TESTS();
  table->Print(Ctx().plugin->name() + " " + Ctx().plugin->version() + " (" + plugin + ")");
  Ctx().registry.reset();
  return rc;
}
