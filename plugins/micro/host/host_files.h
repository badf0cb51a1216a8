// What the host side needs from the machine it runs on: where hetrt's data
// is (the C runtime, board files, TVM's C headers), text files, and commands
// run with their output kept for the error message.
#pragma once

#include <string>
#include <vector>

#include "hetrt/base/status.h"

namespace hetrt::micro {

// share/hetrt, found from where this code was loaded from: a plugin in
// <libdir>/hetrt-plugins of a prefix (<libdir>/../share/hetrt), a one-folder
// package (<pkg>/share/hetrt beside <pkg>/hetrt-plugins), or a program in the
// build tree's bin/ (../share/hetrt).
std::string DataDir();
// <data>/include: tvm/runtime/*.h and dlpack/dlpack.h for generated C code.
std::string GeneratedCodeIncludeDir();

std::string ReadText(const std::string& path);  // "" when unreadable
Status WriteTextFile(const std::string& path, const std::string& text);

// Quotes one argument for /bin/sh.
std::string ShellQuote(const std::string& argument);
// Runs `command` (stdout and stderr kept); FAILED_PRECONDITION with `what`,
// the exit status and the output when it fails.
Status RunCommand(const std::string& command, const std::string& what);

struct CompileOptions {
  std::string compiler = "cc";
  std::vector<std::string> flags;
};
// `cc -shared -fPIC -O2 -o output inputs... flags...`.
Status CompileSharedLibrary(const std::vector<std::string>& inputs, const std::string& output,
                            const CompileOptions& options);

}  // namespace hetrt::micro
