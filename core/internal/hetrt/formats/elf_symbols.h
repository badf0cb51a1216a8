// Lists the dynamic symbols of an ELF64 shared object, with bounds checks on
// every offset (the file may be truncated or hostile). Used to show what a
// host library exports; loading itself goes through dlopen.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "hetrt/base/status.h"

namespace hetrt {

struct ElfSymbol {
  std::string name;
  bool is_function = false;
  bool is_defined = false;
  uint64_t size = 0;
};

Result<std::vector<ElfSymbol>> ReadElfDynamicSymbols(std::span<const uint8_t> file, const std::string& source);

}  // namespace hetrt
