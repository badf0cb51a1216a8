// Firmware on a board emulated by qemu-system-arm. Every run is bounded (a
// deadline, then SIGKILL), QEMU dies with this process (PR_SET_PDEATHSIG), and
// the instruction count is deterministic: -icount shift=8 makes one guest
// instruction take 256 ns of virtual time, so the board's tick counter
// (SysTick on the core clock: 40 or 80 ns a tick) counts 3.2-6.4 ticks an
// instruction and converts to instructions exactly after rounding.
#pragma once

#include <memory>
#include <string>

#include "boards.h"
#include "transport.h"

namespace hetrt::micro {

constexpr int kQemuIcountShift = 8;
// Instructions that took `ticks` of a `tick_hz` clock under -icount (rounded).
uint64_t InstructionsFromTicks(uint64_t ticks, uint32_t tick_hz);

// UNAVAILABLE naming the Debian package when qemu-system-arm is missing.
Status RequireQemu();

struct QemuStandaloneRun {
  int exit_code = -1;  // the firmware's semihosting exit status
  std::string uart;    // what the board printed on UART0
  std::string log;     // QEMU's own messages
};
// Runs a standalone firmware to its semihosting exit; DEADLINE_EXCEEDED-like
// UNAVAILABLE (with what was printed) when it takes longer than timeout_ms.
Result<QemuStandaloneRun> RunQemuStandalone(const BoardSpec& board, const std::string& elf, int timeout_ms);

// A host-driven firmware in QEMU: Open() starts QEMU with UART0 connected to a
// TCP socket this process listens on (127.0.0.1, a port the kernel picks) and
// the monitor on a unix socket; ResetDevice() is the monitor's system_reset.
std::unique_ptr<Transport> MakeQemuTransport(const BoardSpec& board, const std::string& elf);

}  // namespace hetrt::micro
