#include "model_plan.h"

#include <algorithm>
#include <sstream>

namespace hetrt::micro {

uint64_t MetadataArenaBudget(const MlfMetadata& metadata) {
  for (const auto& m : metadata.memory)
    if (m.name == "main") return m.workspace_bytes + m.io_bytes + m.constants_bytes;
  return 0;
}

size_t ModelPlan::LargestRequest() const {
  size_t largest = 64;
  for (const auto& t : inputs) largest = std::max(largest, t.bytes + 4);
  return largest;
}

Result<ModelPlan> PlanModel(const MlfPackage& mlf, const std::vector<sdk::ParamEntry>& inputs, size_t arena_bytes) {
  HETRT_ASSIGN_OR_RETURN(auto probe, InProcessModel::Build(mlf, {}));
  for (int i = 0; i < probe->NumInputs(); ++i) {
    const std::string& name = probe->inputs()[static_cast<size_t>(i)].name;
    if (const sdk::ParamEntry* given = sdk::FindParamEntry(inputs, name))
      HETRT_RETURN_IF_ERROR(probe->SetInput(i, given->bytes).WithContext("input '" + name + "'"));
  }
  HETRT_RETURN_IF_ERROR(probe->Run());
  ModelPlan plan;
  plan.model_name = mlf.metadata().model_name;
  plan.arena_peak = probe->ArenaPeakBytes();
  plan.executor_peak = probe->ExecutorPeakBytes();
  auto slack = [](size_t bytes) { return (bytes + 64 + 15) & ~size_t{15}; };
  plan.arena_bytes = arena_bytes ? arena_bytes : slack(plan.arena_peak);
  plan.executor_bytes = slack(plan.executor_peak);
  plan.metadata_budget = MetadataArenaBudget(mlf.metadata());
  plan.inputs = probe->inputs();
  plan.outputs = probe->outputs();
  return plan;
}

std::string PlanToText(const ModelPlan& plan) {
  std::ostringstream out;
  out << "arena_peak " << plan.arena_peak << "\nexecutor_peak " << plan.executor_peak << "\narena_bytes "
      << plan.arena_bytes << "\nexecutor_bytes " << plan.executor_bytes << "\n";
  return out.str();
}

Result<ModelPlan> PlanFromText(const std::string& text, const MlfPackage& mlf) {
  ModelPlan plan;
  plan.model_name = mlf.metadata().model_name;
  plan.metadata_budget = MetadataArenaBudget(mlf.metadata());
  std::istringstream in(text);
  std::string key;
  size_t value = 0, seen = 0;
  while (in >> key >> value) {
    if (key == "arena_peak")
      plan.arena_peak = value, ++seen;
    else if (key == "executor_peak")
      plan.executor_peak = value, ++seen;
    else if (key == "arena_bytes")
      plan.arena_bytes = value, ++seen;
    else if (key == "executor_bytes")
      plan.executor_bytes = value, ++seen;
  }
  if (seen != 4) return DataLoss("a firmware plan file lacks some of its four numbers");
  HETRT_RETURN_IF_ERROR(DescribeModelIo(mlf, plan.inputs, plan.outputs));
  return plan;
}

}  // namespace hetrt::micro
