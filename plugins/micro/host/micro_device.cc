#include "micro_device.h"

#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "firmware_build.h"
#include "hetrt/sdk/param_dict.h"
#include "host_files.h"
#include "in_process_model.h"
#include "project_writer.h"
#include "qemu_board.h"
#include "remote_model.h"

namespace hetrt::micro {
namespace fs = std::filesystem;

const char* const kModelOptionKeys =
    "transport, board, cache_dir, timeout_ms, run_timeout_ms, retries, bytes_per_second, garbage_every, drop_every, "
    "arena_bytes";

namespace {

Result<int> IntOption(const OptionMap& options, const std::string& key, int fallback, int lo, int hi) {
  auto it = options.find(key);
  if (it == options.end()) return fallback;
  char* end = nullptr;
  const long v = std::strtol(it->second.c_str(), &end, 10);
  if (it->second.empty() || *end != '\0' || v < lo || v > hi)
    return InvalidArgument("micro option " + key + "='" + it->second + "': expected an integer in [" +
                           std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return static_cast<int>(v);
}

std::string Option(const OptionMap& options, const std::string& key, const std::string& fallback = "") {
  auto it = options.find(key);
  return it == options.end() ? fallback : it->second;
}

Status CheckKeys(const OptionMap& options, const std::vector<std::string>& allowed, const std::string& what) {
  for (const auto& [key, value] : options)
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      std::string list;
      for (const auto& k : allowed) list += (list.empty() ? "" : ", ") + k;
      return InvalidArgument("micro " + what + ": unknown option '" + key + "' (options: " + list + ")");
    }
  return OkStatus();
}

// "arena: 3688 of 3776 bytes used (peak); ..." -> (3688, 3776).
void ParseArenaReport(const std::string& text, uint64_t& used, uint64_t& total) {
  unsigned long long u = 0, t = 0;
  if (std::sscanf(text.c_str(), "arena: %llu of %llu", &u, &t) == 2) used = u, total = t;
}

class InProcessMicroModel final : public MicroModel {
 public:
  InProcessMicroModel(std::unique_ptr<InProcessModel> model, uint64_t budget)
      : model_(std::move(model)), budget_(budget) {}
  ModelSession& session() override { return *model_; }
  Result<MicroReport> Report() override {
    MicroReport r;
    r.arena_used = model_->ArenaPeakBytes();
    r.arena_total = model_->ArenaCapacity();
    r.metadata_budget = budget_;
    r.text = model_->ArenaReport();
    return r;
  }

 private:
  std::unique_ptr<InProcessModel> model_;
  uint64_t budget_;
};

class RemoteMicroModel final : public MicroModel {
 public:
  RemoteMicroModel(std::unique_ptr<RemoteModel> model, ModelPlan plan, bool emulated, std::string build_note)
      : model_(std::move(model)), plan_(std::move(plan)), emulated_(emulated), build_note_(std::move(build_note)) {}
  ModelSession& session() override { return *model_; }
  Result<MicroReport> Report() override {
    MicroReport r;
    HETRT_ASSIGN_OR_RETURN(std::string arena, model_->ArenaReport());
    ParseArenaReport(arena, r.arena_used, r.arena_total);
    r.metadata_budget = plan_.metadata_budget;
    const uint64_t ticks = model_->last_run_ticks();
    const uint32_t hz = model_->tick_hz();
    if (hz) r.device_ns = static_cast<uint64_t>(static_cast<unsigned __int128>(ticks) * 1000000000u / hz);
    if (emulated_) r.instructions = InstructionsFromTicks(ticks, hz);
    std::ostringstream text;
    text << "device " << model_->Describe() << (model_->board().empty() ? "" : " [" + model_->board() + "]") << ": "
         << arena;
    if (r.metadata_budget) text << "; MLF metadata budget " << r.metadata_budget;
    if (emulated_ && ticks)
      text << "; last run " << r.instructions << " instructions (QEMU -icount)";
    else if (hz && ticks)
      text << "; last run " << r.device_ns / 1000 << " us on the device clock";
    if (!build_note_.empty()) text << "; " << build_note_;
    r.text = text.str();
    return r;
  }

 private:
  std::unique_ptr<RemoteModel> model_;
  ModelPlan plan_;
  bool emulated_;
  std::string build_note_;
};

Result<std::unique_ptr<MicroModel>> OpenRemote(const MlfPackage& mlf, const std::string& transport,
                                               const OptionMap& options) {
  LinkOptions link;
  HETRT_ASSIGN_OR_RETURN(link.timeout_ms, IntOption(options, "timeout_ms", link.timeout_ms, 10, 600000));
  HETRT_ASSIGN_OR_RETURN(link.run_timeout_ms, IntOption(options, "run_timeout_ms", link.run_timeout_ms, 10, 3600000));
  HETRT_ASSIGN_OR_RETURN(link.retries, IntOption(options, "retries", link.retries, 0, 100));
  HETRT_ASSIGN_OR_RETURN(link.bytes_per_second,
                         IntOption(options, "bytes_per_second", link.bytes_per_second, 100, 1 << 30));
  HETRT_ASSIGN_OR_RETURN(link.garbage_every, IntOption(options, "garbage_every", 0, 0, 1000000));
  HETRT_ASSIGN_OR_RETURN(link.drop_every, IntOption(options, "drop_every", 0, 0, 1000000));
  const std::string cache_dir = Option(options, "cache_dir", DefaultCacheDir());
  std::unique_ptr<Transport> stream;
  ModelPlan plan;
  bool emulated = false;
  std::string note;
  if (transport == "qemu") {
    const std::string board = Option(options, "board", "mps2-an386");
    HETRT_RETURN_IF_ERROR(RequireQemu());
    HETRT_ASSIGN_OR_RETURN(FirmwareBuild build, BuildFirmwareCached(mlf, board, cache_dir));
    plan = build.summary.plan;
    stream = MakeQemuTransport(*build.summary.board, build.host_driven_elf);
    emulated = true;
    note = "firmware " + build.host_driven_elf + " (.text " + std::to_string(build.host_driven.text) + ", .data " +
           std::to_string(build.host_driven.data) + ", .bss " + std::to_string(build.host_driven.bss) + ")";
  } else if (transport == "pipe") {
    // The device program: the host build of the project's `device` target, in the cache.
    HETRT_ASSIGN_OR_RETURN(DeviceProgram device, BuildDeviceProgramCached(mlf, cache_dir));
    plan = std::move(device.plan);
    stream = MakePipeTransport(device.program);
    note = "device program " + device.program;
  } else if (transport.rfind("tcp:", 0) == 0) {
    HETRT_ASSIGN_OR_RETURN(plan, PlanModel(mlf));
    HETRT_ASSIGN_OR_RETURN(stream, MakeTcpTransport(transport.substr(4)));
  } else if (transport.rfind("serial:", 0) == 0) {
    HETRT_ASSIGN_OR_RETURN(plan, PlanModel(mlf));
    HETRT_ASSIGN_OR_RETURN(stream, MakeSerialTransport(transport.substr(7)));
  } else {
    return InvalidArgument("micro: unknown transport '" + transport +
                           "' (inproc, pipe, qemu, tcp:HOST:PORT, serial:PATH[,BAUD])");
  }
  HETRT_ASSIGN_OR_RETURN(auto remote, RemoteModel::Connect(std::move(stream), plan, link));
  return std::unique_ptr<MicroModel>(std::make_unique<RemoteMicroModel>(std::move(remote), plan, emulated, note));
}

}  // namespace

std::string WhyNotMlf(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return path + " is not a file";
  std::ifstream in(path, std::ios::binary);
  char head[264] = {};
  in.read(head, sizeof head);
  const auto got = in.gcount();
  if (got >= 2 && static_cast<uint8_t>(head[0]) == 0x1f && static_cast<uint8_t>(head[1]) == 0x8b) return "";
  if (got >= 262 && std::memcmp(head + 257, "ustar", 5) == 0) return "";
  return "not a Model Library Format tarball";
}

Result<std::unique_ptr<MicroModel>> OpenMicroModel(const std::string& path, const std::string& device,
                                                   const OptionMap& options) {
  HETRT_RETURN_IF_ERROR(CheckKeys(options,
                                  {"transport", "board", "cache_dir", "timeout_ms", "run_timeout_ms", "retries",
                                   "bytes_per_second", "garbage_every", "drop_every", "arena_bytes"},
                                  "device"));
  HETRT_ASSIGN_OR_RETURN(MlfPackage mlf, MlfPackage::Read(path));
  const bool has_board = options.count("board") > 0;
  const std::string transport = Option(options, "transport", device == "cpu" ? "inproc" : has_board ? "qemu" : "pipe");
  if (device == "cpu" && transport != "inproc")
    return InvalidArgument(
        "micro: device 'cpu' runs the model in this process (transport inproc); use --device "
        "micro for transport '" +
        transport + "'");
  if (has_board && transport != "qemu")
    return InvalidArgument("micro: --board builds firmware for an emulated board (transport qemu), not for '" +
                           transport + "'");
  if (transport == "inproc") {
    HETRT_ASSIGN_OR_RETURN(int arena_bytes, IntOption(options, "arena_bytes", 64 << 20, 16, 1 << 30));
    HETRT_ASSIGN_OR_RETURN(auto model, InProcessModel::Build(mlf, {}, static_cast<size_t>(arena_bytes)));
    return std::unique_ptr<MicroModel>(
        std::make_unique<InProcessMicroModel>(std::move(model), MetadataArenaBudget(mlf.metadata())));
  }
  return OpenRemote(mlf, transport, options);
}

Result<std::string> GenerateProject(const std::string& path, const std::string& dir, const OptionMap& options) {
  HETRT_RETURN_IF_ERROR(CheckKeys(options, {"board", "inputs", "arena_bytes"}, "project"));
  HETRT_ASSIGN_OR_RETURN(MlfPackage mlf, MlfPackage::Read(path));
  ProjectOptions project;
  project.board = Option(options, "board");
  if (const std::string inputs = Option(options, "inputs"); !inputs.empty()) {
    HETRT_ASSIGN_OR_RETURN(project.inputs, sdk::ReadParamDictFile(inputs));
  }
  HETRT_ASSIGN_OR_RETURN(int arena, IntOption(options, "arena_bytes", 0, 0, 1 << 30));
  project.arena_bytes = static_cast<size_t>(arena);
  HETRT_ASSIGN_OR_RETURN(ProjectSummary summary, WriteProject(mlf, dir, project));
  const ModelPlan& plan = summary.plan;
  std::ostringstream out;
  out << "wrote " << dir << " for model '" << plan.model_name << "': arena " << plan.arena_bytes
      << " bytes (measured peak " << plan.arena_peak;
  if (plan.metadata_budget) out << ", MLF metadata budget " << plan.metadata_budget;
  out << "), executor tables " << plan.executor_bytes << " bytes\n";
  if (project.board.empty()) {
    out << "build the host program with `make -C " << dir << "`, run " << dir << "/model\n";
    auto sizes = BuildCortexM(dir);
    if (sizes.ok())
      out << "Cortex-M4F firmware for " << summary.board->name << " (make standalone.elf): .text " << sizes->text
          << ", .data " << sizes->data << ", .bss " << sizes->bss << " bytes\n";
    else
      out << "Cortex-M build skipped: " << sizes.status().message() << "\n";
    return out.str();
  }
  out << "board " << summary.board->name << " (" << summary.board->description << "): static RAM estimate "
      << summary.ram_estimate << " of " << summary.board->ram_bytes << " bytes\n";
  HETRT_RETURN_IF_ERROR(RequireTool("arm-none-eabi-gcc", "gcc-arm-none-eabi libnewlib-arm-none-eabi"));
  HETRT_RETURN_IF_ERROR(RunMake(dir, "-j2 firmware"));
  for (const char* elf : {"standalone.elf", "host-driven.elf"}) {
    HETRT_ASSIGN_OR_RETURN(SectionSizes s, ElfSizes(dir + "/" + elf));
    out << elf << ": .text " << s.text << ", .data " << s.data << ", .bss " << s.bss << " bytes (flash "
        << s.text + s.data << " of " << summary.board->flash_bytes << ", static RAM " << s.data + s.bss << " of "
        << summary.board->ram_bytes << ")\n";
  }
  out << "run it: hetrt micro run-qemu " << dir << "   (or make -C " << dir << " run-qemu)\n";
  return out.str();
}

Result<ProjectRun> RunProjectOnQemu(const std::string& dir, const OptionMap& options) {
  HETRT_RETURN_IF_ERROR(CheckKeys(options, {"board", "timeout_ms"}, "run-qemu"));
  HETRT_ASSIGN_OR_RETURN(int timeout_ms, IntOption(options, "timeout_ms", 60000, 100, 3600000));
  // The project's Makefile names its board on its first line.
  std::string board = Option(options, "board");
  if (board.empty()) {
    const std::string makefile = ReadText(dir + "/Makefile");
    const size_t at = makefile.find(", board ");
    if (at == std::string::npos) return NotFound(dir + " is not a project written by `hetrt micro project`");
    board = makefile.substr(at + 8, makefile.find(".\n", at) - at - 8);
  }
  HETRT_ASSIGN_OR_RETURN(const BoardSpec* spec, FindBoard(board));
  if (!fs::exists(dir + "/standalone.elf")) HETRT_RETURN_IF_ERROR(BuildCortexM(dir).status());
  HETRT_ASSIGN_OR_RETURN(QemuStandaloneRun run, RunQemuStandalone(*spec, dir + "/standalone.elf", timeout_ms));
  ProjectRun result;
  result.exit_code = run.exit_code;
  result.output = run.uart;
  unsigned long long init = 0, ticks = 0, hz = 0;
  const size_t at = run.uart.find("ticks: init ");
  if (at != std::string::npos &&
      std::sscanf(run.uart.c_str() + at, "ticks: init %llu, run %llu at %llu Hz", &init, &ticks, &hz) == 3)
    result.output += "instructions (QEMU -icount shift=" + std::to_string(kQemuIcountShift) + "): init " +
                     std::to_string(InstructionsFromTicks(init, static_cast<uint32_t>(hz))) + ", run " +
                     std::to_string(InstructionsFromTicks(ticks, static_cast<uint32_t>(hz))) + "\n";
  if (run.exit_code != 0 && !run.log.empty()) result.output += "qemu: " + run.log;
  return result;
}

}  // namespace hetrt::micro
