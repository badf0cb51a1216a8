/* Cortex-M start-up shared by every board: the vector table, the reset handler
 * (copies .data from flash, zeroes .bss, turns the FPU on where there is one),
 * semihosting exit, and fault reports over the UART. Symbols come from the linker script (cortex_m_sections.ld). */
#include <stdint.h>
#include <string.h>

#include "board.h"

extern uint32_t _estack, _sidata, _sdata, _edata, _sbss, _ebss;
int main(void);

#define REG32(addr) (*(volatile uint32_t*)(addr))
#define SCB_CPACR REG32(0xE000ED88u)
#define SCB_CFSR REG32(0xE000ED28u)

/* Boards without an interrupt-driven tick (their own timer) keep this one. */
void SysTick_Handler(void) __attribute__((weak, alias("Default_Handler")));

void board_uart_print(const char* text) { board_uart_write(text, strlen(text)); }

static void hex32(char* out, uint32_t v) {
  for (int i = 0; i < 8; ++i) out[i] = "0123456789abcdef"[(v >> (28 - 4 * i)) & 0xFu];
}

static void report_fault(const char* what) {
  char text[64] = "\r\nhetrt firmware: ";
  strcat(text, what);
  strcat(text, ", CFSR 0x");
  const size_t n = strlen(text);
  hex32(text + n, SCB_CFSR);
  text[n + 8] = '\0';
  board_uart_print(text);
  board_uart_print("\r\n");
  board_exit(3);
}

void HardFault_Handler(void) { report_fault("hard fault"); }
void MemManage_Handler(void) { report_fault("memory management fault"); }
void BusFault_Handler(void) { report_fault("bus fault"); }
void UsageFault_Handler(void) { report_fault("usage fault"); }
void Default_Handler(void) { report_fault("unexpected interrupt"); }

void board_exit(int status) {
  /* SYS_EXIT_EXTENDED (0x20) with ADP_Stopped_ApplicationExit and the status. */
  volatile uint32_t block[2] = {0x20026u, (uint32_t)status};
  register uint32_t r0 __asm__("r0") = 0x20u;
  register volatile uint32_t* r1 __asm__("r1") = block;
  __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
  for (;;) {
  }
}

void Reset_Handler(void) {
  const uint32_t* from = &_sidata;
  for (uint32_t* to = &_sdata; to < &_edata;) *to++ = *from++;
  for (uint32_t* to = &_sbss; to < &_ebss;) *to++ = 0;
#if defined(__ARM_FP)
  SCB_CPACR |= 0xFu << 20; /* CP10 and CP11: full access */
  __asm__ volatile("dsb\n\tisb" ::: "memory");
#endif
  board_init();
  board_exit(main());
}

typedef void (*vector_t)(void);
__attribute__((section(".isr_vector"), used)) const vector_t g_vectors[16] = {
    (vector_t)(uintptr_t)&_estack,
    Reset_Handler,
    Default_Handler,
    HardFault_Handler,
    MemManage_Handler,
    BusFault_Handler,
    UsageFault_Handler,
    0,
    0,
    0,
    0,
    Default_Handler /* SVCall */,
    Default_Handler /* DebugMon */,
    0,
    Default_Handler /* PendSV */,
    SysTick_Handler,
};
