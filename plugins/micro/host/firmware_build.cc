#include "firmware_build.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>

#include "host_files.h"
#include "model_sources.h"

namespace hetrt::micro {
namespace fs = std::filesystem;
namespace {

struct Fnv1a {
  uint64_t h = 1469598103934665603ull;
  void Add(const void* data, size_t n) {
    for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<const uint8_t*>(data)[i]) * 1099511628211ull;
  }
  void Add(const std::string& s) {
    Add(s.data(), s.size());
    Add("\0", 1);
  }
};

// Every file of hetrt's micro sources that goes into firmware, in a fixed order.
void HashMicroSources(Fnv1a& hash) {
  std::vector<std::string> files;
  for (const char* sub : {"crt", "firmware", "boards"})
    for (const auto& e : fs::recursive_directory_iterator(MicroSourceDir() + "/" + sub))
      if (e.is_regular_file()) files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    hash.Add(fs::path(f).filename().string());
    hash.Add(ReadText(f));
  }
}

// Every file under `dir`, by path relative to it, in a fixed order.
void HashTree(const fs::path& dir, Fnv1a& hash) {
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) files.push_back(fs::relative(e.path(), dir));
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    hash.Add(f.generic_string());
    hash.Add(ReadText((dir / f).string()));
  }
}

std::string HexKey(const Fnv1a& hash) {
  char key[17];
  std::snprintf(key, sizeof key, "%016llx", static_cast<unsigned long long>(hash.h));
  return key;
}

}  // namespace

Status RequireTool(const std::string& tool, const std::string& debian_package) {
  if (std::system(("command -v " + tool + " > /dev/null 2>&1").c_str()) != 0)
    return Unavailable(tool + " is not installed (Debian: " + debian_package + ")");
  return OkStatus();
}

Status RunMake(const std::string& dir, const std::string& target) {
  const std::string log = dir + "/make.log";
  if (std::system(("make -s -C " + ShellQuote(dir) + " " + target + " > " + ShellQuote(log) + " 2>&1").c_str()) == 0)
    return OkStatus();
  const std::string text = ReadText(log);
  std::smatch m;
  if (std::regex_search(text, m, std::regex("region `(\\w+)' overflowed by (\\d+) bytes")))
    return ResourceExhausted("the firmware does not fit: region " + m[1].str() + " overflowed by " + m[2].str() +
                             " bytes (make " + target + " in " + dir + ")");
  return FailedPrecondition("make " + target + " failed in " + dir + ":\n" + text.substr(0, 4000));
}

Result<SectionSizes> ElfSizes(const std::string& elf) {
  FILE* p = popen(("arm-none-eabi-size " + ShellQuote(elf) + " 2>&1").c_str(), "r");
  if (p == nullptr) return Unavailable("cannot run arm-none-eabi-size");
  std::string text;
  char buf[512];
  while (fgets(buf, sizeof buf, p)) text += buf;
  pclose(p);
  std::istringstream in(text);
  std::string line;
  SectionSizes sizes;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    if (fields >> sizes.text >> sizes.data >> sizes.bss) return sizes;
  }
  return DataLoss("arm-none-eabi-size " + elf + " gave no sizes: " + text);
}

Result<SectionSizes> BuildCortexM(const std::string& dir) {
  HETRT_RETURN_IF_ERROR(RequireTool("arm-none-eabi-gcc", "gcc-arm-none-eabi libnewlib-arm-none-eabi"));
  HETRT_RETURN_IF_ERROR(RunMake(dir, "standalone.elf"));
  return ElfSizes(dir + "/standalone.elf");
}

std::string DefaultCacheDir() {
  if (const char* dir = std::getenv("HETRT_MICRO_CACHE_DIR"); dir && *dir) return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::string(xdg) + "/hetrt/micro";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/hetrt/micro";
  return (fs::temp_directory_path() / "hetrt-micro-cache").string();
}

Result<FirmwareBuild> BuildFirmwareCached(const MlfPackage& mlf, const std::string& board, const std::string& cache_dir,
                                          const std::vector<sdk::ParamEntry>& inputs) {
  HETRT_RETURN_IF_ERROR(RequireTool("arm-none-eabi-gcc", "gcc-arm-none-eabi libnewlib-arm-none-eabi"));
  HETRT_ASSIGN_OR_RETURN(const BoardSpec* spec, FindBoard(board));
  // The package's files, not the tarball's bytes: the same model exported
  // again (a new export_datetime, other tar headers) hits the cache.
  Fnv1a hash;
  for (const auto& [name, bytes] : mlf.files()) {
    hash.Add(name);
    if (name == "metadata.json" || name == "./metadata.json") {
      const std::string text = std::regex_replace(std::string(bytes.begin(), bytes.end()),
                                                  std::regex("\"export_datetime\"\\s*:\\s*\"[^\"]*\""), "");
      hash.Add(text);
    } else {
      hash.Add(bytes.data(), bytes.size());
    }
  }
  hash.Add(spec->name);
  for (const auto& in : inputs) {
    hash.Add(in.name);
    hash.Add(in.bytes.data(), in.bytes.size());
  }
  HashMicroSources(hash);
  const fs::path final_dir = fs::path(cache_dir) / (mlf.metadata().model_name + "-" + spec->name + "-" + HexKey(hash));
  FirmwareBuild build;
  build.dir = final_dir.string();
  build.standalone_elf = build.dir + "/standalone.elf";
  build.host_driven_elf = build.dir + "/host-driven.elf";
  std::error_code ec;
  if (!(fs::exists(build.standalone_elf, ec) && fs::exists(build.host_driven_elf, ec))) {
    fs::create_directories(cache_dir, ec);
    if (ec) return Unavailable("cannot create the firmware cache " + cache_dir + ": " + ec.message());
    std::random_device rd;
    const fs::path work = fs::path(cache_dir) / ("building-" + std::to_string(getpid()) + "-" + std::to_string(rd()));
    ProjectOptions options;
    options.inputs = inputs;
    options.board = spec->name;
    auto summary = WriteProject(mlf, work.string(), options);
    Status made = summary.ok() ? RunMake(work.string(), "-j2 firmware") : summary.status();
    if (!made.ok()) {
      fs::remove_all(work, ec);
      return made;
    }
    fs::rename(work, final_dir, ec);  // another builder may have won: its folder is as good
    if (ec) fs::remove_all(work, ec);
  } else {
    build.from_cache = true;
  }
  ProjectSummary summary;
  summary.board = spec;
  HETRT_ASSIGN_OR_RETURN(summary.plan, PlanFromText(ReadText(build.dir + "/hetrt_plan.txt"), mlf));
  HETRT_ASSIGN_OR_RETURN(summary.ram_estimate, CheckFitsBoard(summary.plan, mlf.metadata(), *spec));
  build.summary = std::move(summary);
  HETRT_ASSIGN_OR_RETURN(build.standalone, ElfSizes(build.standalone_elf));
  HETRT_ASSIGN_OR_RETURN(build.host_driven, ElfSizes(build.host_driven_elf));
  return build;
}

Result<DeviceProgram> BuildDeviceProgramCached(const MlfPackage& mlf, const std::string& cache_dir) {
  std::error_code ec;
  fs::create_directories(cache_dir, ec);
  if (ec) return Unavailable("cannot create the micro build cache " + cache_dir + ": " + ec.message());
  std::random_device rd;
  const fs::path work = fs::path(cache_dir) / ("building-" + std::to_string(getpid()) + "-" + std::to_string(rd()));
  struct RemoveWork {
    const fs::path& dir;
    ~RemoveWork() {
      std::error_code ignored;
      fs::remove_all(dir, ignored);  // gone already when renamed into place
    }
  } remove_work{work};
  HETRT_ASSIGN_OR_RETURN(ProjectSummary summary, WriteProject(mlf, work.string(), {}));
  Fnv1a hash;
  hash.Add("host device program");
  HashTree(work, hash);
  const fs::path final_dir = fs::path(cache_dir) / (mlf.metadata().model_name + "-host-" + HexKey(hash));
  DeviceProgram built{(final_dir / "device").string(), std::move(summary.plan)};
  if (fs::exists(built.program, ec)) return built;
  HETRT_RETURN_IF_ERROR(RunMake(work.string(), "device"));
  fs::rename(work, final_dir, ec);  // another builder may have won: its program is as good
  if (!fs::exists(built.program))
    return Unavailable("the device program built in " + work.string() + " could not be kept as " + built.program +
                       (ec ? ": " + ec.message() : ""));
  return built;
}

}  // namespace hetrt::micro
