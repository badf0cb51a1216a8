/* What a board gives hetrt's firmware: a UART, a tick counter, a way to stop.
 * One C file per board family implements it (mps2_cmsdk.c, stellaris.c); the
 * Cortex-M startup code (cortex_m_startup.c) calls board_init before main. */
#ifndef HETRT_BOARD_H_
#define HETRT_BOARD_H_

#include <stddef.h>
#include <stdint.h>

void board_init(void);
void board_uart_write(const void* data, size_t n);
void board_uart_print(const char* text);
/* Blocks until a byte arrives. */
uint8_t board_uart_getc(void);

/* A monotonic 64-bit tick count, board_tick_hz per second, from a timer on
 * the board's system clock (counted in software, no interrupt, where the
 * timer is 32 bits wide). Under QEMU with -icount shift=S one instruction
 * takes 2^S ns of virtual time, so ticks convert to instructions. */
uint64_t board_ticks(void);
extern const uint32_t board_tick_hz;
extern const char board_name[];

/* Ends the program with `status` through Arm semihosting (SYS_EXIT_EXTENDED,
 * which QEMU turns into its exit status); spins where no debugger listens. */
void board_exit(int status) __attribute__((noreturn));

#endif
