#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "hetrt_crt.h"

static char g_last_error[256];

const char* hetrt_crt_last_error(void) { return g_last_error; }

hetrt_crt_status_t hetrt_crt_fail(hetrt_crt_status_t status, const char* format, ...) {
  va_list args;
  va_start(args, format);
  vsnprintf(g_last_error, sizeof g_last_error, format, args);
  va_end(args);
  return status;
}

void hetrt_crt_arena_init(hetrt_crt_arena_t* arena, void* buffer, size_t size) {
  memset(arena, 0, sizeof *arena);
  /* Align the base so every allocation is 16-byte aligned. */
  uintptr_t p = (uintptr_t)buffer;
  uintptr_t aligned = (p + 15u) & ~(uintptr_t)15u;
  arena->base = (uint8_t*)aligned;
  arena->size = size > aligned - p ? size - (aligned - p) : 0;
  arena->size &= ~(size_t)15u;
}

void* hetrt_crt_arena_alloc(hetrt_crt_arena_t* arena, size_t bytes, hetrt_crt_pool_t pool) {
  /* 8-byte granules: every scalar type's natural alignment (C kernels need no
   * more), and tensors pack as tightly as TVM's memory plan counts them. */
  const size_t rounded = (bytes + 7u) & ~(size_t)7u;
  if (rounded < bytes || arena->head + rounded + arena->tail > arena->size) {
    hetrt_crt_fail(HETRT_CRT_ERR_NO_MEMORY, "arena full: %lu bytes for %s wanted, %lu of %lu free",
                   (unsigned long)bytes, hetrt_crt_pool_name(pool),
                   (unsigned long)(arena->size - arena->head - arena->tail), (unsigned long)arena->size);
    return NULL;
  }
  void* p = arena->base + arena->head;
  arena->head += rounded;
  arena->pool_bytes[pool] += bytes; /* requested bytes; alignment padding shows in the peak */
  if (arena->head + arena->tail > arena->peak) arena->peak = arena->head + arena->tail;
  return p;
}

size_t hetrt_crt_arena_peak(const hetrt_crt_arena_t* arena) { return arena->peak; }

const char* hetrt_crt_pool_name(hetrt_crt_pool_t pool) {
  static const char* const kNames[HETRT_CRT_NUM_POOLS] = {"executor", "tensors", "params", "workspace"};
  return (unsigned)pool < HETRT_CRT_NUM_POOLS ? kNames[pool] : "?";
}

void hetrt_crt_arena_report(const hetrt_crt_arena_t* arena, char* out, size_t out_size) {
  size_t n = (size_t)snprintf(out, out_size, "arena: %lu of %lu bytes used (peak)",
                              (unsigned long)hetrt_crt_arena_peak(arena), (unsigned long)arena->size);
  for (int p = 0; p < HETRT_CRT_NUM_POOLS && n < out_size; ++p) {
    const size_t bytes = p == HETRT_CRT_POOL_WORKSPACE ? arena->peak_tail : arena->pool_bytes[p];
    n += (size_t)snprintf(out + n, out_size - n, "; %s %lu", hetrt_crt_pool_name((hetrt_crt_pool_t)p),
                          (unsigned long)bytes);
  }
}
