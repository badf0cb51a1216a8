/* A model with no tensors and nothing to run: linked into the firmware
 * skeleton (`make runtime.elf`) that measures what hetrt's runtime, protocol
 * server and board support cost on their own. */
#include "hetrt_model.h"

int hetrt_model_init(hetrt_crt_arena_t* arena, hetrt_crt_arena_t* executor) {
  (void)executor;
  hetrt_crt_set_workspace_arena(arena);
  return HETRT_CRT_OK;
}
int hetrt_model_num_inputs(void) { return 0; }
int hetrt_model_num_outputs(void) { return 0; }
const char* hetrt_model_input_name(int index) { return index, (const char*)0; }
const char* hetrt_model_output_name(int index) { return index, (const char*)0; }
void* hetrt_model_input(int index, size_t* nbytes) { return index, nbytes, (void*)0; }
void* hetrt_model_output(int index, size_t* nbytes) { return index, nbytes, (void*)0; }
int hetrt_model_run(void) { return HETRT_CRT_OK; }
const char* hetrt_model_last_error(void) { return hetrt_crt_last_error(); }
size_t hetrt_model_arena_peak(const hetrt_crt_arena_t* arena) { return hetrt_crt_arena_peak(arena); }
void hetrt_model_arena_report(const hetrt_crt_arena_t* arena, char* out, size_t size) {
  hetrt_crt_arena_report(arena, out, size);
}
