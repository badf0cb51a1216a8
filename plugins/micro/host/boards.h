// The boards hetrt builds firmware for: each is a C file under boards/ (UART,
// clock), a linker script (flash and RAM), compiler flags and the QEMU
// machine that emulates it. Adding a board is adding a row and its two files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hetrt/base/status.h"

namespace hetrt::micro {

struct BoardSpec {
  std::string name;  // "mps2-an386"
  std::string description;
  std::string qemu_machine;   // qemu-system-arm -M ...
  std::string cpu_flags;      // -mcpu=... -mthumb ...
  std::string driver;         // boards/<driver>: UART and clock
  std::string linker_script;  // boards/<script>
  uint64_t flash_bytes = 0, ram_bytes = 0, stack_bytes = 0;
};

const std::vector<BoardSpec>& Boards();
// NOT_FOUND naming the boards there are.
Result<const BoardSpec*> FindBoard(const std::string& name);
std::string BoardNames();  // "mps2-an386, mps2-an385, lm3s6965evb"

}  // namespace hetrt::micro
