/* Arm MPS2 boards (QEMU mps2-an385: Cortex-M3, mps2-an386: Cortex-M4): CMSDK
 * APB UART0 at 0x40004000, 25 MHz system clock. */
#include "board.h"

#define REG32(addr) (*(volatile uint32_t*)(addr))
#define UART0_DATA REG32(0x40004000u)
#define UART0_STATE REG32(0x40004004u) /* bit 0: TX full, bit 1: RX full */
#define UART0_CTRL REG32(0x40004008u)  /* bit 0: TX enable, bit 1: RX enable */
#define UART0_BAUDDIV REG32(0x40004010u)

#ifndef HETRT_BOARD_NAME
#define HETRT_BOARD_NAME "mps2"
#endif
const char board_name[] = HETRT_BOARD_NAME;
const uint32_t board_tick_hz = 25000000u;

void board_init(void) {
  UART0_BAUDDIV = 25000000u / 115200u;
  UART0_CTRL = 3u;
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
