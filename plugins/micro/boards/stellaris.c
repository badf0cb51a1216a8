/* TI Stellaris LM3S6965 evaluation board (QEMU lm3s6965evb, Cortex-M3): UART0
 * is a PL011 at 0x4000C000; the core clock after reset is 12.5 MHz (QEMU's
 * model: 200 MHz / (SYSDIV 15 + 1)). Ticks come from SysTick (QEMU 7.2 does
 * not let a program read the general-purpose timers' value): 24 bits, so
 * wraps are counted by an interrupt, every 2^24 ticks (1.3 s); each adds the
 * handler's few instructions to what a long run measures. */
#include "board.h"

#define REG32(addr) (*(volatile uint32_t*)(addr))
#define SYSCTL_RCGC1 REG32(0x400FE104u)
#define UART0_DR REG32(0x4000C000u)
#define UART0_FR REG32(0x4000C018u) /* bit 4: RX FIFO empty, bit 5: TX FIFO full */
#define UART0_IBRD REG32(0x4000C024u)
#define UART0_FBRD REG32(0x4000C028u)
#define UART0_LCRH REG32(0x4000C02Cu)
#define UART0_CR REG32(0x4000C030u)
#define SYSCTL_RCGC1_TIMER0 (1u << 16)
#define GPTM0_CFG REG32(0x40030000u)
#define GPTM0_TAMR REG32(0x40030004u)
#define GPTM0_CTL REG32(0x4003000Cu)
#define GPTM0_TAILR REG32(0x40030028u)
#define SYST_CSR REG32(0xE000E010u)
#define SYST_RVR REG32(0xE000E014u)
#define SYST_CVR REG32(0xE000E018u)

static volatile uint32_t g_systick_wraps;

void SysTick_Handler(void) { ++g_systick_wraps; }

uint64_t board_ticks(void) {
  /* A wrap between the two reads shows as a changed count: read again. */
  for (;;) {
    const uint32_t wraps = g_systick_wraps;
    const uint32_t value = SYST_CVR;
    if (wraps == g_systick_wraps) return ((uint64_t)wraps << 24) + (0xFFFFFFu - value);
  }
}

const char board_name[] = "lm3s6965evb";
const uint32_t board_tick_hz = 12500000u;

void board_init(void) {
  SYSCTL_RCGC1 |= 1u | SYSCTL_RCGC1_TIMER0; /* clock UART0 and timer 0 */
  UART0_CR = 0;
  UART0_IBRD = 6u; /* 12.5 MHz / (16 * 115200) = 6.78 */
  UART0_FBRD = 50u;
  UART0_LCRH = 0x70u; /* 8 bits, FIFOs on */
  UART0_CR = 0x301u;  /* UART, TX and RX enabled */
  SYST_RVR = 0xFFFFFFu;
  SYST_CVR = 0;
  SYST_CSR = 7u; /* enable, interrupt on wrap, core clock */
  /* Timer 0, periodic every 65536 cycles, no interrupt, measures nothing:
   * under QEMU -icount its deadline bounds how long the emulated CPU runs
   * before QEMU looks at its sockets, so UART bytes arrive promptly. */
  GPTM0_CFG = 0;   /* 32-bit */
  GPTM0_TAMR = 2u; /* periodic */
  GPTM0_TAILR = 0xFFFFu;
  GPTM0_CTL = 1u; /* timer A on */
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
