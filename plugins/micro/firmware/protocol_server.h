/* The device side of the framed protocol (hetrt_crt_protocol.h), for any byte
 * stream: a board's UART or a program's stdin/stdout. C99, no malloc: the one
 * receive buffer is the caller's; replies stream straight from the model's
 * memory. */
#ifndef HETRT_PROTOCOL_SERVER_H_
#define HETRT_PROTOCOL_SERVER_H_

#include <stddef.h>
#include <stdint.h>

#include "hetrt_crt.h"

typedef struct {
  /* Returns 0 with a byte, non-zero when the stream has ended. */
  int (*read_byte)(void* io, uint8_t* byte);
  void (*write)(void* io, const void* data, size_t n);
  void* io;
  uint8_t* rx; /* one frame: HETRT_FRAME_OVERHEAD + the largest payload */
  size_t rx_capacity;
  uint64_t (*ticks)(void); /* NULL: runs report 0 ticks */
  uint32_t tick_hz;
  const char* board; /* named in HELLO and BOOT */
  hetrt_crt_arena_t* arena;
  /* Non-NULL when hetrt_model_init failed: every command gets this error. */
  const char* init_error;
  /* Set by HELLO; 0 after a reset, when every other command is refused so
   * that the host notices the device lost its state. */
  uint32_t session;
} hetrt_server_t;

/* Sends the unsolicited BOOT frame (seq 0): the host learns of a reset at once. */
void hetrt_server_announce_boot(hetrt_server_t* s);
/* Reads and answers one frame (skipping bytes until one checks). Returns
 * non-zero when the stream has ended. */
int hetrt_server_serve_one(hetrt_server_t* s);

#endif
