/* Standalone program for the host: runs the model once on the embedded
 * inputs with static arenas, prints the outputs and the arena report.
 * Usage: ./model [OUTPUT_PREFIX]  (writes OUTPUT_PREFIX<i>.bin per output) */
#include <stdio.h>
#include <string.h>

#include "hetrt_firmware_config.h"
#include "hetrt_model.h"
#include "model_inputs.h"

static unsigned char g_arena[HETRT_ARENA_BYTES] __attribute__((aligned(16)));
static unsigned char g_executor[HETRT_EXECUTOR_BYTES] __attribute__((aligned(16)));

int main(int argc, char** argv) {
  hetrt_crt_arena_t arena, executor;
  hetrt_crt_arena_init(&arena, g_arena, sizeof g_arena);
  hetrt_crt_arena_init(&executor, g_executor, sizeof g_executor);
  if (hetrt_model_init(&arena, &executor) != 0) {
    fprintf(stderr, "init failed: %s\n", hetrt_model_last_error());
    return 1;
  }
  for (int i = 0; i < hetrt_model_num_inputs() && i < hetrt_num_embedded_inputs; ++i) {
    size_t bytes = 0;
    unsigned char* dst = (unsigned char*)hetrt_model_input(i, &bytes);
    if (hetrt_embedded_input_bytes[i] == bytes)
      memcpy(dst, hetrt_embedded_inputs[i], bytes);
    else if (hetrt_embedded_input_bytes[i] != 0) {
      fprintf(stderr, "input %d: embedded size mismatch\n", i);
      return 1;
    }
  }
  if (hetrt_model_run() != 0) {
    fprintf(stderr, "run failed: %s\n", hetrt_model_last_error());
    return 1;
  }
  for (int i = 0; i < hetrt_model_num_outputs(); ++i) {
    size_t bytes = 0;
    const float* out = (const float*)hetrt_model_output(i, &bytes);
    printf("%s:", hetrt_model_output_name(i));
    for (size_t k = 0; k < bytes / sizeof(float) && k < 10; ++k) printf(" %g", out[k]);
    printf("\n");
    if (argc > 1) {
      char path[512];
      snprintf(path, sizeof path, "%s%d.bin", argv[1], i);
      FILE* f = fopen(path, "wb");
      if (!f || fwrite(out, 1, bytes, f) != bytes) {
        fprintf(stderr, "cannot write %s\n", path);
        return 1;
      }
      fclose(f);
    }
  }
  char report[512];
  hetrt_model_arena_report(&arena, report, sizeof report);
  printf("%s; executor tables %lu (separate, static)\n", report, (unsigned long)hetrt_model_arena_peak(&executor));
  return 0;
}
