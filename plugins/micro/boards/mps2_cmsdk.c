/* Arm MPS2 boards (QEMU mps2-an385: Cortex-M3, mps2-an386: Cortex-M4): CMSDK
 * APB UART0 at 0x40004000; CMSDK APB timer 0 at 0x40000000, a 32-bit down
 * counter on the 25 MHz system clock, for the ticks. */
#include "board.h"

#define REG32(addr) (*(volatile uint32_t*)(addr))
#define UART0_DATA REG32(0x40004000u)
#define UART0_STATE REG32(0x40004004u) /* bit 0: TX full, bit 1: RX full */
#define UART0_CTRL REG32(0x40004008u)  /* bit 0: TX enable, bit 1: RX enable */
#define UART0_BAUDDIV REG32(0x40004010u)
#define TIMER0_CTRL REG32(0x40000000u)
#define TIMER0_VALUE REG32(0x40000004u)
#define TIMER0_RELOAD REG32(0x40000008u)
#define SYST_CSR REG32(0xE000E010u)
#define SYST_RVR REG32(0xE000E014u)

#ifndef HETRT_BOARD_NAME
#define HETRT_BOARD_NAME "mps2"
#endif
const char board_name[] = HETRT_BOARD_NAME;
const uint32_t board_tick_hz = 25000000u;

void board_init(void) {
  UART0_BAUDDIV = 25000000u / 115200u;
  UART0_CTRL = 3u;
  TIMER0_RELOAD = 0xFFFFFFFFu;
  TIMER0_VALUE = 0xFFFFFFFFu;
  TIMER0_CTRL = 1u; /* enable, no interrupt */
  /* SysTick wrapping every 65536 cycles, without an interrupt, measures
   * nothing: under QEMU -icount its deadline bounds how long the emulated CPU
   * runs before QEMU looks at its sockets, so UART bytes arrive promptly. */
  SYST_RVR = 0xFFFFu;
  SYST_CSR = 5u; /* enable, core clock, no interrupt */
}

/* 32 bits of 25 MHz wrap every 171 s: counting wraps between readings keeps
 * 64 bits exact as long as the firmware reads the ticks that often, with no
 * interrupt (whose handler would add instructions to what is measured). */
uint64_t board_ticks(void) {
  static uint32_t last;
  static uint64_t wraps;
  const uint32_t now = 0xFFFFFFFFu - TIMER0_VALUE;
  if (now < last) wraps += 1ull << 32;
  last = now;
  return wraps | now;
}

void board_uart_write(const void* data, size_t n) {
  const uint8_t* p = (const uint8_t*)data;
  for (size_t i = 0; i < n; ++i) {
    while (UART0_STATE & 1u) {
    }
    UART0_DATA = p[i];
  }
}

uint8_t board_uart_getc(void) {
  while (!(UART0_STATE & 2u)) {
  }
  return (uint8_t)UART0_DATA;
}
