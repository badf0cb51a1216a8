/* hetrt's C runtime for microcontrollers (C99, no malloc).
 *
 * All memory comes from one arena the caller supplies. Allocation failures are
 * errors (HETRT_CRT_ERR_NO_MEMORY) reported with a message, never a crash. The
 * runtime executes TVM-generated C code: graph models through a small graph
 * executor (graph JSON + params), AOT models through their generated entry
 * point. Memory use is reported per pool, like TFLite Micro's arena report. */
#ifndef HETRT_CRT_H_
#define HETRT_CRT_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  HETRT_CRT_OK = 0,
  HETRT_CRT_ERR_NO_MEMORY = 1,
  HETRT_CRT_ERR_INVALID = 2,   /* malformed graph JSON, params, arguments */
  HETRT_CRT_ERR_NOT_FOUND = 3, /* a function or input that does not exist */
  HETRT_CRT_ERR_KERNEL = 4,    /* a generated function returned an error */
} hetrt_crt_status_t;

/* Where the bytes of the arena went. */
typedef enum {
  HETRT_CRT_POOL_EXECUTOR = 0,  /* graph structures, call frames */
  HETRT_CRT_POOL_TENSORS = 1,   /* activations, inputs and outputs */
  HETRT_CRT_POOL_PARAMS = 2,    /* weights copied from a param dict */
  HETRT_CRT_POOL_WORKSPACE = 3, /* TVMBackendAllocWorkspace, peak */
  HETRT_CRT_NUM_POOLS = 4
} hetrt_crt_pool_t;

typedef struct {
  uint8_t* base;
  size_t size;
  size_t head;                            /* persistent allocations grow up from base */
  size_t tail;                            /* workspace (LIFO) grows down from base + size */
  size_t peak_tail;                       /* largest workspace use */
  size_t peak;                            /* largest head + tail at any moment */
  size_t pool_bytes[HETRT_CRT_NUM_POOLS]; /* bytes requested per pool */
} hetrt_crt_arena_t;

void hetrt_crt_arena_init(hetrt_crt_arena_t* arena, void* buffer, size_t size);
/* Persistent allocation, 8-byte aligned; NULL (with the error set) when full. */
void* hetrt_crt_arena_alloc(hetrt_crt_arena_t* arena, size_t bytes, hetrt_crt_pool_t pool);
/* Bytes in use at the peak: persistent + largest workspace. */
size_t hetrt_crt_arena_peak(const hetrt_crt_arena_t* arena);
const char* hetrt_crt_pool_name(hetrt_crt_pool_t pool);
/* Writes the report ("arena: 1234 of 4096 bytes used ...") into `out`. */
void hetrt_crt_arena_report(const hetrt_crt_arena_t* arena, char* out, size_t out_size);

/* The arena that TVMBackendAllocWorkspace serves from (set by the executors). */
void hetrt_crt_set_workspace_arena(hetrt_crt_arena_t* arena);

/* The last error's message ("" when none). */
const char* hetrt_crt_last_error(void);
hetrt_crt_status_t hetrt_crt_fail(hetrt_crt_status_t status, const char* format, ...);

/* ---- Graph executor ---- */
typedef struct hetrt_crt_graph hetrt_crt_graph_t;
/* Tensors (storage, inputs, outputs) and kernel workspace come from `arena`;
 * the executor's own tables and the temporary parse tokens from `executor`
 * (which may be the same arena). Keeping them apart makes `arena` exactly the
 * model's memory, comparable with the MLF metadata. `json` must stay valid
 * while the graph lives (generated code embeds it). `params` (a TVM param
 * dict, may be NULL) is copied into the inputs it names. */
hetrt_crt_status_t hetrt_crt_graph_create(hetrt_crt_arena_t* arena, hetrt_crt_arena_t* executor, const char* json,
                                          size_t json_len, const uint8_t* params, size_t params_len,
                                          hetrt_crt_graph_t** out);
int hetrt_crt_graph_num_inputs(const hetrt_crt_graph_t* g);
int hetrt_crt_graph_num_outputs(const hetrt_crt_graph_t* g);
const char* hetrt_crt_graph_input_name(const hetrt_crt_graph_t* g, int index);
int hetrt_crt_graph_input_index(const hetrt_crt_graph_t* g, const char* name);
void* hetrt_crt_graph_input_data(hetrt_crt_graph_t* g, int index, size_t* nbytes);
void* hetrt_crt_graph_output_data(hetrt_crt_graph_t* g, int index, size_t* nbytes);
hetrt_crt_status_t hetrt_crt_graph_run(hetrt_crt_graph_t* g);

#ifdef __cplusplus
}
#endif
#endif
