// `hetrt mlf inspect MODEL.tar`: what a Model Library Format tarball holds.
#include <cstdio>

#include "commands.h"
#include "hetrt/base/tensor.h"
#include "hetrt/mlf.h"

namespace hetrt::cli {

Command AddMlfCommand(CLI::App& app) {
  auto* mlf = app.add_subcommand("mlf", "Model Library Format tarballs");
  mlf->require_subcommand(1);
  auto* inspect = mlf->add_subcommand("inspect", "Model name, executors, targets, memory summary and files");
  auto path = std::make_shared<std::string>();
  inspect->add_option("MODEL", *path, "MLF tarball")->required();
  return [path] {
    auto pkg = MlfPackage::Read(*path);
    if (!pkg.ok()) return Fail(pkg.status().message());
    const MlfMetadata& md = pkg->metadata();
    std::printf("%s\nmodel: %s (metadata version %d%s%s)\n", path->c_str(), md.model_name.c_str(), md.version,
                md.export_datetime.empty() ? "" : ", exported ", md.export_datetime.c_str());
    std::printf("executors:");
    for (const auto& e : md.executors) std::printf(" %s", e.c_str());
    std::printf("\ntargets:");
    for (const auto& t : md.targets) std::printf(" '%s'", t.c_str());
    std::printf("\nmemory (bytes):\n  %-60s %6s %10s %10s %10s\n", "function", "device", "workspace", "constants",
                "io");
    for (const auto& m : md.memory)
      std::printf("  %-60s %6d %10llu %10llu %10llu\n", m.name.c_str(), m.device,
                  static_cast<unsigned long long>(m.workspace_bytes),
                  static_cast<unsigned long long>(m.constants_bytes), static_cast<unsigned long long>(m.io_bytes));
    // main's inputs and outputs (version-7 metadata): shapes from src/<model>.relay.
    for (const auto* list : {&md.inputs, &md.outputs}) {
      if (list->empty()) continue;
      std::printf("%s:\n", list == &md.inputs ? "inputs" : "outputs");
      for (const MlfTensorInfo& t : *list)
        std::printf("  %-30s %-10s %10llu bytes  %s\n", t.name.c_str(), t.dtype.c_str(),
                    static_cast<unsigned long long>(t.bytes),
                    t.shape.empty()
                        ? ("shape unknown (no src/" + md.model_name + ".relay): run as a flat tensor").c_str()
                        : ShapeToString(t.shape).c_str());
    }
    std::printf("files:\n");
    for (const auto& [name, data] : pkg->files()) std::printf("  %-60s %10zu\n", name.c_str(), data.size());
    return 0;
  };
}

}  // namespace hetrt::cli
