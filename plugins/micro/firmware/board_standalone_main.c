/* Standalone firmware: runs the model once on the inputs embedded at project
 * generation, prints every output (hex bytes), the arena report and the
 * ticks init and run took over the UART, then exits through semihosting. */
#include <stdio.h>
#include <string.h>

#include "board.h"
#include "hetrt_firmware_config.h"
#include "hetrt_model.h"
#include "model_inputs.h"

static uint8_t g_arena[HETRT_ARENA_BYTES] __attribute__((aligned(16)));
static uint8_t g_executor[HETRT_EXECUTOR_BYTES] __attribute__((aligned(16)));

static void fail(const char* what) {
  board_uart_print("hetrt: error: ");
  board_uart_print(what);
  board_uart_print(": ");
  board_uart_print(hetrt_model_last_error());
  board_uart_print("\n");
}

static void print_hex(const uint8_t* p, size_t n) {
  char chunk[64];
  size_t used = 0;
  for (size_t i = 0; i < n; ++i) {
    chunk[used++] = "0123456789abcdef"[p[i] >> 4];
    chunk[used++] = "0123456789abcdef"[p[i] & 15];
    if (used == sizeof chunk) {
      board_uart_write(chunk, used);
      used = 0;
    }
  }
  board_uart_write(chunk, used);
}

int main(void) {
  static hetrt_crt_arena_t arena, executor;
  char line[160];
  hetrt_crt_arena_init(&arena, g_arena, sizeof g_arena);
  hetrt_crt_arena_init(&executor, g_executor, sizeof g_executor);
  board_uart_print("hetrt: model " HETRT_MODEL_NAME " on ");
  board_uart_print(board_name);
  board_uart_print("\n");
  const uint64_t t0 = board_ticks();
  if (hetrt_model_init(&arena, &executor) != 0) return fail("init"), 1;
  for (int i = 0; i < hetrt_model_num_inputs() && i < hetrt_num_embedded_inputs; ++i) {
    size_t bytes = 0;
    uint8_t* dst = (uint8_t*)hetrt_model_input(i, &bytes);
    if (hetrt_embedded_input_bytes[i] == bytes) memcpy(dst, hetrt_embedded_inputs[i], bytes);
  }
  const uint64_t t1 = board_ticks();
  if (hetrt_model_run() != 0) return fail("run"), 1;
  const uint64_t t2 = board_ticks();
  for (int i = 0; i < hetrt_model_num_outputs(); ++i) {
    size_t bytes = 0;
    const uint8_t* out = (const uint8_t*)hetrt_model_output(i, &bytes);
    snprintf(line, sizeof line, "output %d %s %lu ", i, hetrt_model_output_name(i), (unsigned long)bytes);
    board_uart_print(line);
    print_hex(out, bytes);
    board_uart_print("\n");
  }
  hetrt_model_arena_report(&arena, line, sizeof line);
  board_uart_print(line);
  snprintf(line, sizeof line, "; executor tables %lu\n", (unsigned long)hetrt_model_arena_peak(&executor));
  board_uart_print(line);
  snprintf(line, sizeof line, "ticks: init %lu, run %lu at %lu Hz\n", (unsigned long)(t1 - t0),
           (unsigned long)(t2 - t1), (unsigned long)board_tick_hz);
  board_uart_print(line);
  board_uart_print("hetrt: done\n");
  return 0;
}
