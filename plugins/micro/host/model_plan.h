// What a device build of a model needs, measured once with an in-process run:
// the static arena (tensors + kernel workspace) and executor table sizes, the
// tensors, and what the MLF metadata budgets. The runtime's plan is
// deterministic, so the measured peaks plus alignment slack are enough.
#pragma once

#include <string>
#include <vector>

#include "hetrt/sdk/mlf_package.h"
#include "hetrt/sdk/param_dict.h"
#include "in_process_model.h"

namespace hetrt::micro {

struct ModelPlan {
  std::string model_name;
  size_t arena_peak = 0, executor_peak = 0;    // measured
  size_t arena_bytes = 0, executor_bytes = 0;  // the static buffers of a device build
  uint64_t metadata_budget = 0;                // main's workspace + io + constants in metadata.json (0: not given)
  std::vector<TensorSpec> inputs, outputs;
  // The largest request payload a device must receive (SET_INPUT: index + bytes).
  size_t LargestRequest() const;
};

// `inputs` (by name; zeros for the rest) feed the measuring run. `arena_bytes`
// overrides the measured arena when non-zero.
Result<ModelPlan> PlanModel(const MlfPackage& mlf, const std::vector<sdk::ParamEntry>& inputs = {},
                            size_t arena_bytes = 0);

uint64_t MetadataArenaBudget(const MlfMetadata& metadata);

// The measured numbers as text ("arena_peak 3688\n..."), kept beside built
// firmware so a cached build needs no new measuring run; the tensors come
// back from the MLF (DescribeModelIo).
std::string PlanToText(const ModelPlan& plan);
Result<ModelPlan> PlanFromText(const std::string& text, const MlfPackage& mlf);

}  // namespace hetrt::micro
