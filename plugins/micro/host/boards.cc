#include "boards.h"

namespace hetrt::micro {

const std::vector<BoardSpec>& Boards() {
  static const std::vector<BoardSpec> boards = {
      {"mps2-an386", "Arm MPS2 AN386, Cortex-M4F, 4 MB code SSRAM + 4 MB data SSRAM, CMSDK UART0", "mps2-an386",
       "-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16", "mps2_cmsdk.c", "mps2.ld", 4u << 20, 4u << 20,
       32u << 10},
      {"mps2-an385", "Arm MPS2 AN385, Cortex-M3, 4 MB code SSRAM + 4 MB data SSRAM, CMSDK UART0", "mps2-an385",
       "-mcpu=cortex-m3 -mthumb -mfloat-abi=soft", "mps2_cmsdk.c", "mps2.ld", 4u << 20, 4u << 20, 32u << 10},
      {"lm3s6965evb", "TI Stellaris LM3S6965, Cortex-M3, 256 KB flash, 64 KB SRAM, PL011 UART0", "lm3s6965evb",
       "-mcpu=cortex-m3 -mthumb -mfloat-abi=soft", "stellaris.c", "lm3s6965evb.ld", 256u << 10, 64u << 10, 8u << 10},
  };
  return boards;
}

std::string BoardNames() {
  std::string names;
  for (const auto& b : Boards()) names += (names.empty() ? "" : ", ") + b.name;
  return names;
}

Result<const BoardSpec*> FindBoard(const std::string& name) {
  for (const auto& b : Boards())
    if (b.name == name) return &b;
  return NotFound("no board named '" + name + "' (boards: " + BoardNames() + ")");
}

}  // namespace hetrt::micro
