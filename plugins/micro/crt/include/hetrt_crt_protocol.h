/* The framed protocol between a host and a device program over a byte stream
 * (a pipe, a serial port, a board's UART through an emulator's socket). Shared
 * by both sides: firmware/protocol_server.c and host/frame_client.cc.
 *
 *   u8 'H', u8 'R', u16 seq, u8 type, u8 flags, u32 length, payload[length], u32 crc32
 *
 * All integers little-endian; the CRC (IEEE 802.3) covers header and payload.
 * Every command is idempotent, so a host that gets no valid reply in time
 * sends it again with the same seq. A device skips bytes until it finds a
 * frame whose CRC checks.
 *
 * Sessions: HELLO carries a host-chosen u32 session; until a device has one
 * (after power-up or a reset) it refuses every other command, and at boot it
 * sends an unsolicited BOOT frame (seq 0). Either way the host learns that the
 * device lost its inputs, reports it, and replays them on the next call. */
#ifndef HETRT_CRT_PROTOCOL_H_
#define HETRT_CRT_PROTOCOL_H_

#include <stddef.h>
#include <stdint.h>

#define HETRT_FRAME_MAGIC0 0x48
#define HETRT_FRAME_MAGIC1 0x52
#define HETRT_FRAME_HEADER 10
#define HETRT_FRAME_OVERHEAD (HETRT_FRAME_HEADER + 4)

enum {
  /* u32 session -> u32 inputs, u32 outputs, per tensor: u32 bytes, u16 name
   * length, name; then u32 tick_hz, u16 length, board name */
  HETRT_MSG_HELLO = 1,
  HETRT_MSG_SET_INPUT = 2,  /* u32 index, bytes -> empty */
  HETRT_MSG_RUN = 3,        /* -> u64 ticks the run took (0: no clock) */
  HETRT_MSG_GET_OUTPUT = 4, /* u32 index -> bytes */
  HETRT_MSG_ARENA = 5,      /* -> report text */
  HETRT_MSG_BOOT = 6,       /* device -> host, unsolicited at boot: board name */
  HETRT_MSG_REPLY = 0x80,   /* OR-ed into the type of a successful reply */
  HETRT_MSG_ERROR = 0xFF,   /* payload: message text */
};

static inline uint32_t hetrt_crc32(uint32_t crc, const uint8_t* data, size_t n) {
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) {
    crc ^= data[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

#endif
