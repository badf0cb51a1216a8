// `hetrt micro project MODEL.tar -o DIR [--board B]` and `hetrt micro run-qemu
// DIR`: the project hooks of the plugin that runs whole models on the device
// "micro" (ABI 2.1), so boards and firmware stay the plugin's business.
#include <cstdio>

#include "commands.h"
#include "hetrt/exec/whole_model_executor.h"

namespace hetrt::cli {

Command AddMicroCommand(CLI::App& app) {
  auto* micro = app.add_subcommand("micro", "Projects and emulated boards for the micro device's plugin");
  micro->require_subcommand(1);
  struct Args {
    std::string model, dir, inputs, board, run_dir, run_board;
    int arena_bytes = 0, timeout_s = 60;
    bool project = false;
  };
  auto args = std::make_shared<Args>();
  auto* project = micro->add_subcommand("project",
                                        "Write a self-contained C project (Makefile, static arena, "
                                        "firmware for a board with --board)");
  project->add_option("MODEL", args->model, "MLF tarball")->required();
  project->add_option("-o,--output", args->dir, "project folder")->required();
  project->add_option("--inputs", args->inputs, "param dict of inputs to embed (zeros otherwise)");
  project->add_option("--board", args->board, "build firmware for this board (hetrt plugins lists them)");
  project->add_option("--arena-bytes", args->arena_bytes, "the arena (default: a measured run's peak + slack)")
      ->check(IntInRange("--arena-bytes", 0, 1 << 30));
  project->callback([args] { args->project = true; });
  auto* run = micro->add_subcommand("run-qemu", "Run a project's standalone firmware on its emulated board");
  run->add_option("DIR", args->run_dir, "a folder `hetrt micro project --board` wrote")->required();
  run->add_option("--board", args->run_board, "the board (default: the project's)");
  run->add_option("--timeout", args->timeout_s, "seconds before the board is stopped")
      ->check(IntInRange("--timeout", 1, 3600));
  return [args] {
    WarnAboutUnusedPlugins();
    if (args->project) {
      PluginOptions options;
      if (!args->board.empty()) options.emplace_back("board", args->board);
      if (!args->inputs.empty()) options.emplace_back("inputs", args->inputs);
      if (args->arena_bytes > 0) options.emplace_back("arena_bytes", std::to_string(args->arena_bytes));
      auto summary = GenerateWholeModelProject("micro", args->model, args->dir, options);
      if (!summary.ok()) return Fail(summary.status().message());
      std::printf("%s", summary->c_str());
      return 0;
    }
    PluginOptions options{{"timeout_ms", std::to_string(args->timeout_s * 1000)}};
    if (!args->run_board.empty()) options.emplace_back("board", args->run_board);
    auto ran = RunWholeModelProject("micro", args->run_dir, options);
    if (!ran.ok()) return Fail(ran.status().message());
    std::printf("%s", ran->output.c_str());
    if (ran->exit_code != 0) return Fail("the firmware exited with status " + std::to_string(ran->exit_code));
    return 0;
  };
}

}  // namespace hetrt::cli
