// Where hetrt's micro sources live, and how a model's C files are laid out in
// a build folder: the C runtime, the model's MLF code, its glue, the firmware.
#pragma once

#include <string>
#include <vector>

#include "hetrt/sdk/mlf_package.h"

namespace hetrt::micro {

// <data>/micro: crt/, firmware/, boards/ (staged there from plugins/micro).
std::string MicroSourceDir();

// The C runtime's sources (absolute paths) and include folders.
std::vector<std::string> RuntimeSources();
std::vector<std::string> RuntimeIncludeDirs();

// Writes under `dir`: mlf/ (the tarball extracted), model_glue.c, crt/ (the
// runtime, its headers, TVM's C headers, DLPack's header: the folder builds
// where nothing is installed) and firmware/ (protocol server and the mains).
// Returns the model's C sources relative to `dir`: glue, runtime, model code.
Result<std::vector<std::string>> WriteModelSources(const MlfPackage& mlf, const std::string& dir);
// -I flags (absolute) for those sources.
std::vector<std::string> ModelIncludeFlags(const std::string& dir);

}  // namespace hetrt::micro
