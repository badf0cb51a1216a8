// `hetrt micro project`: a self-contained C project for one model. `make`
// builds the host program (./model, no board) or the board's firmware in two
// flavours (standalone.elf, host-driven.elf) with arm-none-eabi-gcc; the
// arenas are static, sized from a measured run; inputs are embedded.
#pragma once

#include <string>
#include <vector>

#include "boards.h"
#include "hetrt/sdk/mlf_package.h"
#include "hetrt/sdk/param_dict.h"
#include "model_plan.h"

namespace hetrt::micro {

struct ProjectOptions {
  std::vector<sdk::ParamEntry> inputs;  // embedded; zeros for inputs not given
  size_t arena_bytes = 0;               // 0: measured with an in-process run
  // "" : `make` builds the host program; the firmware targets are there for
  // the default board (mps2-an386). A board: `make` builds its firmware, and
  // a model that cannot fit the board's RAM or flash is refused here.
  std::string board;
};

struct ProjectSummary {
  ModelPlan plan;
  const BoardSpec* board = nullptr;
  uint64_t ram_estimate = 0;  // static RAM of the host-driven firmware, before linking
};

Result<ProjectSummary> WriteProject(const MlfPackage& mlf, const std::string& dir, const ProjectOptions& options);

// The same, without a board and without the summary (what the old API offered).
Status WriteStandaloneProject(const MlfPackage& mlf, const std::string& dir, const ProjectOptions& options);

// Refuses a model whose arena, tables, buffers and stack exceed the board's
// RAM, or whose constants exceed its flash, with every number named.
Result<uint64_t> CheckFitsBoard(const ModelPlan& plan, const MlfMetadata& metadata, const BoardSpec& board);

}  // namespace hetrt::micro
