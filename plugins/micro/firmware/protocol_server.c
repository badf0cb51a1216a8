/* The device side of hetrt's framed protocol; see protocol_server.h. */
#include "protocol_server.h"

#include <string.h>

#include "hetrt_crt_protocol.h"
#include "hetrt_model.h"

static void put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get32(const uint8_t* p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* A reply in up to two pieces (a small head, then the model's own bytes), with
 * the CRC computed as it goes. */
static void reply2(hetrt_server_t* s, uint16_t seq, uint8_t type, const void* a, uint32_t a_len, const void* b,
                   uint32_t b_len) {
  uint8_t header[HETRT_FRAME_HEADER] = {
      HETRT_FRAME_MAGIC0, HETRT_FRAME_MAGIC1, (uint8_t)seq, (uint8_t)(seq >> 8), type, 0};
  put32(header + 6, a_len + b_len);
  uint32_t crc = hetrt_crc32(0, header, sizeof header);
  s->write(s->io, header, sizeof header);
  if (a_len) {
    crc = hetrt_crc32(crc, (const uint8_t*)a, a_len);
    s->write(s->io, a, a_len);
  }
  if (b_len) {
    crc = hetrt_crc32(crc, (const uint8_t*)b, b_len);
    s->write(s->io, b, b_len);
  }
  uint8_t tail[4];
  put32(tail, crc);
  s->write(s->io, tail, 4);
}

static void reply(hetrt_server_t* s, uint16_t seq, uint8_t type, const void* payload, uint32_t len) {
  reply2(s, seq, type, payload, len, NULL, 0);
}

static void error(hetrt_server_t* s, uint16_t seq, const char* text) {
  reply(s, seq, HETRT_MSG_ERROR, text, (uint32_t)strlen(text));
}

void hetrt_server_announce_boot(hetrt_server_t* s) {
  reply(s, 0, HETRT_MSG_BOOT, s->board, (uint32_t)strlen(s->board));
}

/* HELLO: u32 inputs, u32 outputs, per tensor u32 bytes + u16 name length +
 * name, then u32 tick_hz + u16 length + board name. Streamed piece by piece. */
static void hello(hetrt_server_t* s, uint16_t seq, const uint8_t* p, uint32_t len) {
  if (len >= 4) s->session = get32(p);
  const int ni = hetrt_model_num_inputs(), no = hetrt_model_num_outputs();
  uint32_t total = 8 + 6 + (uint32_t)strlen(s->board);
  for (int k = 0; k < ni + no; ++k)
    total += 6 + (uint32_t)strlen(k < ni ? hetrt_model_input_name(k) : hetrt_model_output_name(k - ni));
  uint8_t header[HETRT_FRAME_HEADER] = {
      HETRT_FRAME_MAGIC0, HETRT_FRAME_MAGIC1, (uint8_t)seq, (uint8_t)(seq >> 8), HETRT_MSG_HELLO | HETRT_MSG_REPLY, 0};
  put32(header + 6, total);
  uint32_t crc = hetrt_crc32(0, header, sizeof header);
  s->write(s->io, header, sizeof header);
#define EMIT(ptr, n)                                    \
  do {                                                  \
    crc = hetrt_crc32(crc, (const uint8_t*)(ptr), (n)); \
    s->write(s->io, (ptr), (n));                        \
  } while (0)
  uint8_t b[8];
  put32(b, (uint32_t)ni);
  put32(b + 4, (uint32_t)no);
  EMIT(b, 8);
  for (int k = 0; k < ni + no; ++k) {
    size_t bytes = 0;
    const char* name = k < ni ? hetrt_model_input_name(k) : hetrt_model_output_name(k - ni);
    if (k < ni)
      hetrt_model_input(k, &bytes);
    else
      hetrt_model_output(k - ni, &bytes);
    const size_t l = strlen(name);
    put32(b, (uint32_t)bytes);
    b[4] = (uint8_t)l, b[5] = (uint8_t)(l >> 8);
    EMIT(b, 6);
    EMIT(name, l);
  }
  const size_t l = strlen(s->board);
  put32(b, s->tick_hz);
  b[4] = (uint8_t)l, b[5] = (uint8_t)(l >> 8);
  EMIT(b, 6);
  EMIT(s->board, l);
#undef EMIT
  put32(b, crc);
  s->write(s->io, b, 4);
}

static void handle(hetrt_server_t* s, uint16_t seq, uint8_t type, const uint8_t* p, uint32_t len) {
  size_t bytes = 0;
  if (s->init_error != NULL) return error(s, seq, s->init_error);
  if (type == HETRT_MSG_HELLO) return hello(s, seq, p, len);
  if (s->session == 0) return error(s, seq, "no session: the device restarted since the last HELLO");
  switch (type) {
    case HETRT_MSG_SET_INPUT: {
      if (len < 4) return error(s, seq, "SET_INPUT: no index");
      void* dst = hetrt_model_input((int)get32(p), &bytes);
      if (dst == NULL) return error(s, seq, "SET_INPUT: no such input");
      if (bytes != len - 4) return error(s, seq, "SET_INPUT: wrong size");
      memcpy(dst, p + 4, bytes);
      return reply(s, seq, HETRT_MSG_SET_INPUT | HETRT_MSG_REPLY, NULL, 0);
    }
    case HETRT_MSG_RUN: {
      const uint64_t start = s->ticks ? s->ticks() : 0;
      if (hetrt_model_run() != 0) return error(s, seq, hetrt_model_last_error());
      const uint64_t ticks = s->ticks ? s->ticks() - start : 0;
      uint8_t b[8];
      put32(b, (uint32_t)ticks);
      put32(b + 4, (uint32_t)(ticks >> 32));
      return reply(s, seq, HETRT_MSG_RUN | HETRT_MSG_REPLY, b, 8);
    }
    case HETRT_MSG_GET_OUTPUT: {
      if (len < 4) return error(s, seq, "GET_OUTPUT: no index");
      const void* src = hetrt_model_output((int)get32(p), &bytes);
      if (src == NULL) return error(s, seq, "GET_OUTPUT: no such output");
      return reply2(s, seq, HETRT_MSG_GET_OUTPUT | HETRT_MSG_REPLY, NULL, 0, src, (uint32_t)bytes);
    }
    case HETRT_MSG_ARENA: {
      char text[256];
      hetrt_model_arena_report(s->arena, text, sizeof text);
      return reply(s, seq, HETRT_MSG_ARENA | HETRT_MSG_REPLY, text, (uint32_t)strlen(text));
    }
    default: return error(s, seq, "unknown message type");
  }
}

static int read_exact(hetrt_server_t* s, uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (s->read_byte(s->io, p + i)) return -1;
  return 0;
}

int hetrt_server_serve_one(hetrt_server_t* s) {
  uint8_t* f = s->rx;
  for (;;) {
    /* Resynchronise on the magic bytes, then read the rest of the header. */
    if (read_exact(s, f, 1)) return -1;
    if (f[0] != HETRT_FRAME_MAGIC0) continue;
    if (read_exact(s, f + 1, 1)) return -1;
    if (f[1] != HETRT_FRAME_MAGIC1) continue;
    if (read_exact(s, f + 2, HETRT_FRAME_HEADER - 2)) return -1;
    const uint16_t seq = (uint16_t)(f[2] | f[3] << 8);
    const uint32_t len = get32(f + 6);
    if (len > s->rx_capacity - HETRT_FRAME_OVERHEAD) {
      /* Most likely garbage that looked like a header: say so, keep scanning. */
      error(s, seq, "frame too long");
      continue;
    }
    if (read_exact(s, f + HETRT_FRAME_HEADER, len + 4)) return -1;
    if (hetrt_crc32(0, f, HETRT_FRAME_HEADER + len) != get32(f + HETRT_FRAME_HEADER + len)) {
      error(s, seq, "bad CRC");
      continue;
    }
    handle(s, seq, f[4], f + HETRT_FRAME_HEADER, len);
    return 0;
  }
}
