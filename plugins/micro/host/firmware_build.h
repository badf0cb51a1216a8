// Builds a project's firmware with arm-none-eabi-gcc (make), reports its
// sections, and keeps built firmware in a cache keyed by what went into it.
#pragma once

#include <string>
#include <vector>

#include "hetrt/sdk/mlf_package.h"
#include "hetrt/sdk/param_dict.h"
#include "project_writer.h"

namespace hetrt::micro {

struct SectionSizes {
  uint64_t text = 0, data = 0, bss = 0;  // flash = text + data; static RAM = data + bss
};
using CortexMSizes = SectionSizes;

// UNAVAILABLE naming the Debian package when a tool is missing.
Status RequireTool(const std::string& tool, const std::string& debian_package);
// `make -C dir target`; the error carries make's output, with the linker's
// "region overflowed" turned into the board's numbers.
Status RunMake(const std::string& dir, const std::string& target);
// arm-none-eabi-size (Berkeley format) of one ELF.
Result<SectionSizes> ElfSizes(const std::string& elf);
// Builds the project's standalone firmware and reports its sections.
Result<SectionSizes> BuildCortexM(const std::string& dir);

struct FirmwareBuild {
  std::string dir;  // the project, in the cache
  std::string standalone_elf, host_driven_elf;
  SectionSizes standalone, host_driven;
  ProjectSummary summary;
  bool from_cache = false;
};

// $HETRT_MICRO_CACHE_DIR, else $XDG_CACHE_HOME/hetrt/micro, else ~/.cache/hetrt/micro.
std::string DefaultCacheDir();

// The firmware of `mlf` for `board`, both flavours, built once per (the
// package's files, export time aside; board; embedded inputs; hetrt's micro
// sources):
// <cache_dir>/<model>-<board>-<hash>. Concurrent builders of one key are safe
// (each builds in its own folder and renames it into place).
Result<FirmwareBuild> BuildFirmwareCached(const MlfPackage& mlf, const std::string& board, const std::string& cache_dir,
                                          const std::vector<sdk::ParamEntry>& inputs = {});

struct DeviceProgram {
  std::string program;  // in the cache
  ModelPlan plan;
};

// The project's host-driven device program for this host (`make device`, the
// pipe transport's device), built once per project: the files the project
// holds (its makefile, the model's sources, the runtime) name
// <cache_dir>/<model>-host-<hash>/device, so opening a model again starts
// the program built before. Concurrent builders are safe, as above.
Result<DeviceProgram> BuildDeviceProgramCached(const MlfPackage& mlf, const std::string& cache_dir);

}  // namespace hetrt::micro
