/* A shim plugin for the conformance kit's ABI negotiation checks. The kit
 * dlopens it, points it at the real plugin's table with a version and size to
 * claim (hetrt_conformance_shim_configure), then has the core's loader load it
 * as a plugin: the loader reads the patched copy, so the kit sees how the core
 * treats the plugin's own table under another minor or major. The functions in
 * the copy are the real plugin's. */
#include <stdint.h>
#include <string.h>

#include "hetrt/plugin_abi.h"

/* Room for any 2.x table the kit asks for (the real table plus appended
 * fields a newer minor would carry). */
static union {
  hetrt_plugin_api_t api;
  unsigned char bytes[4096];
} g_table;

HETRT_PLUGIN_EXPORT int hetrt_conformance_shim_configure(const hetrt_plugin_api_t* real, uint16_t abi_major,
                                                         uint16_t abi_minor, size_t struct_size) {
  if (real == NULL || struct_size > sizeof g_table || struct_size < sizeof(hetrt_plugin_api_prefix_t)) return -1;
  memset(&g_table, 0, sizeof g_table);
  const size_t copied = real->struct_size < struct_size ? real->struct_size : struct_size;
  memcpy(g_table.bytes, real, copied);
  g_table.api.struct_size = struct_size;
  g_table.api.abi_major = abi_major;
  g_table.api.abi_minor = abi_minor;
  return 0;
}

HETRT_PLUGIN_EXPORT const hetrt_plugin_api_t* hetrt_plugin_get_api(void) { return &g_table.api; }
