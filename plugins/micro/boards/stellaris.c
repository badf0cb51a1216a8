/* TI Stellaris LM3S6965 evaluation board (QEMU lm3s6965evb, Cortex-M3): UART0
 * is a PL011 at 0x4000C000; the core clock after reset is 12.5 MHz (QEMU's
 * model: 200 MHz / (SYSDIV 15 + 1)). */
#include "board.h"

#define REG32(addr) (*(volatile uint32_t*)(addr))
#define SYSCTL_RCGC1 REG32(0x400FE104u)
#define UART0_DR REG32(0x4000C000u)
#define UART0_FR REG32(0x4000C018u) /* bit 4: RX FIFO empty, bit 5: TX FIFO full */
#define UART0_IBRD REG32(0x4000C024u)
#define UART0_FBRD REG32(0x4000C028u)
#define UART0_LCRH REG32(0x4000C02Cu)
#define UART0_CR REG32(0x4000C030u)

const char board_name[] = "lm3s6965evb";
const uint32_t board_tick_hz = 12500000u;

void board_init(void) {
  SYSCTL_RCGC1 |= 1u; /* clock UART0 */
  UART0_CR = 0;
  UART0_IBRD = 6u; /* 12.5 MHz / (16 * 115200) = 6.78 */
  UART0_FBRD = 50u;
  UART0_LCRH = 0x70u; /* 8 bits, FIFOs on */
  UART0_CR = 0x301u;  /* UART, TX and RX enabled */
}

void board_uart_write(const void* data, size_t n) {
  const uint8_t* p = (const uint8_t*)data;
  for (size_t i = 0; i < n; ++i) {
    while (UART0_FR & (1u << 5)) {
    }
    UART0_DR = p[i];
  }
}

uint8_t board_uart_getc(void) {
  while (UART0_FR & (1u << 4)) {
  }
  return (uint8_t)UART0_DR;
}
