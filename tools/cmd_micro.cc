// `hetrt micro project MODEL.tar -o DIR`: a standalone C project for the model.
#include <cstdio>

#include "commands.h"
#include "hetrt/mlf.h"
#include "micro_model.h"

namespace hetrt::cli {

Command AddMicroCommand(CLI::App& app) {
  auto* micro = app.add_subcommand("micro", "Run Model Library Format models on hetrt's C runtime");
  micro->require_subcommand(1);
  auto* project = micro->add_subcommand("project", "Write a self-contained C project (Makefile, main.c, static arena)");
  struct Args {
    std::string model, dir, inputs;
  };
  auto args = std::make_shared<Args>();
  project->add_option("MODEL", args->model, "MLF tarball")->required();
  project->add_option("-o,--output", args->dir, "project folder")->required();
  project->add_option("--inputs", args->inputs, "param dict of inputs to embed (zeros otherwise)");
  return [args] {
    auto mlf = MlfPackage::Read(args->model);
    if (!mlf.ok()) return Fail(mlf.status().message());
    micro::ProjectOptions options;
    if (!args->inputs.empty()) {
      auto inputs = LoadParamDictFile(args->inputs);
      if (!inputs.ok()) return Fail(inputs.status().message());
      options.inputs = std::move(inputs).value();
    }
    Status s = micro::WriteStandaloneProject(*mlf, args->dir, options);
    if (!s.ok()) return Fail(args->model + ": " + s.message());
    std::printf("wrote %s: build with `make -C %s`, run ./model\n", args->dir.c_str(), args->dir.c_str());
    auto sizes = micro::BuildCortexM(args->dir);
    if (sizes.ok())
      std::printf("Cortex-M4F build (make cortex-m): .text %llu, .data %llu, .bss %llu bytes\n",
                  static_cast<unsigned long long>(sizes->text), static_cast<unsigned long long>(sizes->data),
                  static_cast<unsigned long long>(sizes->bss));
    else
      std::printf("Cortex-M build skipped: %s\n", sizes.status().message().c_str());
    return 0;
  };
}

}  // namespace hetrt::cli
