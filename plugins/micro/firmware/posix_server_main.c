/* The device program of the "pipe" transport: the model on hetrt's C runtime
 * served over stdin/stdout with the framed protocol, as firmware serves it
 * over a UART. Ticks are nanoseconds of CLOCK_MONOTONIC. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "hetrt_crt_protocol.h"
#include "hetrt_firmware_config.h"
#include "hetrt_model.h"
#include "protocol_server.h"

static uint8_t g_arena[HETRT_ARENA_BYTES] __attribute__((aligned(16)));
static uint8_t g_executor[HETRT_EXECUTOR_BYTES] __attribute__((aligned(16)));
static uint8_t g_rx[HETRT_RX_BYTES + HETRT_FRAME_OVERHEAD];

/* Buffered stdin: one read() per chunk, not per byte. */
static int stdin_read(void* io, uint8_t* byte) {
  static uint8_t buf[4096];
  static size_t at, end;
  (void)io;
  if (at == end) {
    const ssize_t n = read(0, buf, sizeof buf);
    if (n <= 0) return -1;
    at = 0, end = (size_t)n;
  }
  *byte = buf[at++];
  return 0;
}

static void stdout_write(void* io, const void* data, size_t n) {
  const uint8_t* p = (const uint8_t*)data;
  (void)io;
  while (n > 0) {
    const ssize_t w = write(1, p, n);
    if (w <= 0) return;
    p += w;
    n -= (size_t)w;
  }
}

static uint64_t monotonic_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

int main(void) {
  static hetrt_crt_arena_t arena, executor;
  hetrt_crt_arena_init(&arena, g_arena, sizeof g_arena);
  hetrt_crt_arena_init(&executor, g_executor, sizeof g_executor);
  hetrt_server_t server = {stdin_read, stdout_write, NULL, g_rx, sizeof g_rx, monotonic_ns, 1000000000u,
                           "host",     &arena,       NULL, 0};
  if (hetrt_model_init(&arena, &executor) != 0) server.init_error = hetrt_model_last_error();
  hetrt_server_announce_boot(&server);
  while (hetrt_server_serve_one(&server) == 0) {
  }
  return 0;
}
