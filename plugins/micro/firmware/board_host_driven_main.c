/* Host-driven firmware: the model on hetrt's C runtime, served over the
 * board's UART with the framed protocol. Sizes come from the generated
 * hetrt_firmware_config.h. */
#include "board.h"
#include "hetrt_crt_protocol.h"
#include "hetrt_firmware_config.h"
#include "hetrt_model.h"
#include "protocol_server.h"

static uint8_t g_arena[HETRT_ARENA_BYTES] __attribute__((aligned(16)));
static uint8_t g_executor[HETRT_EXECUTOR_BYTES] __attribute__((aligned(16)));
static uint8_t g_rx[HETRT_RX_BYTES + HETRT_FRAME_OVERHEAD];

static int uart_read(void* io, uint8_t* byte) {
  (void)io;
  *byte = board_uart_getc();
  return 0;
}

static void uart_write(void* io, const void* data, size_t n) {
  (void)io;
  board_uart_write(data, n);
}

int main(void) {
  static hetrt_crt_arena_t arena, executor;
  hetrt_crt_arena_init(&arena, g_arena, sizeof g_arena);
  hetrt_crt_arena_init(&executor, g_executor, sizeof g_executor);
  hetrt_server_t server = {uart_read,  uart_write, NULL, g_rx, sizeof g_rx, board_ticks, board_tick_hz,
                           board_name, &arena,     NULL, 0};
  if (hetrt_model_init(&arena, &executor) != 0) server.init_error = hetrt_model_last_error();
  hetrt_server_announce_boot(&server);
  for (;;) hetrt_server_serve_one(&server);
}
