/* A minimal ABI 2 plugin in plain C, built in several variants to test the
 * plugin host: TEST_ABI_MAJOR / TEST_ABI_MINOR set the version it claims, and
 * TEST_NO_ENTRY leaves the entry symbol out, TEST_CRASH_IN_CREATE crashes in
 * instance_create. It loads blobs of type_key
 * "hetrt_test" (u64 length + that many bytes) whose one function adds 1, and
 * counts its live instances (global "__hetrt_test_live_instances"). */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "hetrt/plugin_abi.h"

#ifndef TEST_ABI_MAJOR
#define TEST_ABI_MAJOR HETRT_PLUGIN_ABI_MAJOR
#endif
#ifndef TEST_ABI_MINOR
#define TEST_ABI_MINOR HETRT_PLUGIN_ABI_MINOR
#endif

struct hetrt_error {
  hetrt_status_code_t code;
  char message[128];
};

static hetrt_error_t* make_error(hetrt_status_code_t code, const char* message) {
  hetrt_error_t* e = (hetrt_error_t*)calloc(1, sizeof(*e));
  e->code = code;
  strncpy(e->message, message, sizeof(e->message) - 1);
  return e;
}
static hetrt_error_t* error_message(hetrt_error_message_args_t* args) {
  args->message = args->error->message;
  args->code = args->error->code;
  return NULL;
}
static hetrt_error_t* error_destroy(hetrt_error_destroy_args_t* args) {
  free(args->error);
  return NULL;
}

static int64_t g_live_instances;

static int32_t add_one(hetrt_value_t* args, int32_t* codes, int32_t n, hetrt_value_t* ret, int32_t* ret_code,
                       void* resource);
static int32_t answer(hetrt_value_t* args, int32_t* codes, int32_t n, hetrt_value_t* ret, int32_t* ret_code,
                      void* resource);
static int32_t live_instances(hetrt_value_t* args, int32_t* codes, int32_t n, hetrt_value_t* ret, int32_t* ret_code,
                              void* resource);
static int32_t launches(hetrt_value_t* args, int32_t* codes, int32_t n, hetrt_value_t* ret, int32_t* ret_code,
                        void* resource);

struct hetrt_instance {
  const hetrt_host_api_t* host;
  hetrt_global_function_t globals[3];
};

static hetrt_error_t* instance_create(hetrt_instance_create_args_t* args) {
#ifdef TEST_CRASH_IN_CREATE
  raise(SIGSEGV); /* a plugin with a bug: `hetrt plugins --check` must name it */
#endif
  hetrt_instance_t* self = (hetrt_instance_t*)calloc(1, sizeof(*self));
  if (self == NULL) return make_error(HETRT_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  self->host = args->host;
  self->globals[0].name = "__hetrt_test_answer";
  self->globals[0].func.call = answer;
  self->globals[1].name = "__hetrt_test_live_instances";
  self->globals[1].func.call = live_instances;
  self->globals[2].name = "__hetrt_test_parallel_launches";
  self->globals[2].func.call = launches;
  args->instance = self;
  __atomic_add_fetch(&g_live_instances, 1, __ATOMIC_SEQ_CST);
  return NULL;
}
static hetrt_error_t* instance_destroy(hetrt_instance_destroy_args_t* args) {
  free(args->self);
  __atomic_sub_fetch(&g_live_instances, 1, __ATOMIC_SEQ_CST);
  return NULL;
}
static hetrt_error_t* set_option(hetrt_set_option_args_t* args) {
  (void)args;
  return make_error(HETRT_STATUS_INVALID_ARGUMENT, "test plugin takes no options");
}
static hetrt_error_t* global_functions(hetrt_global_functions_args_t* args) {
  args->functions = args->self->globals;
  args->num_functions = 3;
  return NULL;
}

struct hetrt_plugin_module {
  const hetrt_host_api_t* host;
  uint64_t payload_size;
};

static int32_t add_one(hetrt_value_t* args, int32_t* codes, int32_t n, hetrt_value_t* ret, int32_t* ret_code,
                       void* resource) {
  hetrt_plugin_module_t* m = (hetrt_plugin_module_t*)resource;
  if (n != 1 || codes[0] != HETRT_TYPE_INT) {
    m->host->set_last_error("add_one takes one int");
    return -1;
  }
  ret->v_int64 = args[0].v_int64 + 1;
  *ret_code = HETRT_TYPE_INT;
  return 0;
}

static int32_t answer(hetrt_value_t* args, int32_t* codes, int32_t n, hetrt_value_t* ret, int32_t* ret_code,
                      void* resource) {
  (void)args, (void)codes, (void)n, (void)resource;
  ret->v_int64 = 42;
  *ret_code = HETRT_TYPE_INT;
  return 0;
}

static int32_t live_instances(hetrt_value_t* args, int32_t* codes, int32_t n, hetrt_value_t* ret, int32_t* ret_code,
                              void* resource) {
  (void)args, (void)codes, (void)n, (void)resource;
  ret->v_int64 = __atomic_load_n(&g_live_instances, __ATOMIC_SEQ_CST);
  *ret_code = HETRT_TYPE_INT;
  return 0;
}

static hetrt_error_t* module_load(hetrt_module_load_args_t* args) {
  uint64_t n;
  if (args->size < 8) return make_error(HETRT_STATUS_DATA_LOSS, "hetrt_test blob truncated");
  memcpy(&n, args->data, 8);
  if (n > args->size - 8) return make_error(HETRT_STATUS_DATA_LOSS, "hetrt_test payload truncated");
  args->module = (hetrt_plugin_module_t*)calloc(1, sizeof(hetrt_plugin_module_t));
  args->module->host = args->self->host;
  args->module->payload_size = n;
  args->consumed = 8 + n;
  return NULL;
}

static hetrt_error_t* module_get_function(hetrt_module_get_function_args_t* args) {
  args->found = strcmp(args->name, "test_add_one") == 0;
  if (args->found) {
    args->function.call = add_one;
    args->function.resource = args->module;
  }
  return NULL;
}

static hetrt_error_t* module_list_functions(hetrt_module_list_functions_args_t* args) {
  if (args->capacity > 0) args->names[0] = "test_add_one";
  args->count = 1;
  return NULL;
}

static hetrt_error_t* module_destroy(hetrt_module_destroy_args_t* args) {
  free(args->module);
  return NULL;
}

static const hetrt_module_api_t kModuleApi = {
    sizeof(hetrt_module_api_t), module_load, module_get_function, module_list_functions, NULL, module_destroy,
};

/* A serial task "pool" that counts its launches, so a test can see that an
 * executor's compiled code reached this plugin (its registry's) and not the
 * global registry's CPU plugin. */
static int64_t g_launches;

static hetrt_error_t* parallel_launch(hetrt_parallel_launch_args_t* args) {
  __atomic_add_fetch(&g_launches, 1, __ATOMIC_SEQ_CST);
  hetrt_parallel_group_env_t env = {NULL, args->num_task > 0 ? args->num_task : 1};
  args->failed_task = -1;
  for (int32_t t = 0; t < env.num_task; ++t)
    if (args->lambda(t, &env, args->cdata) != 0 && args->failed_task < 0) args->failed_task = t;
  return NULL;
}
static hetrt_error_t* parallel_barrier(hetrt_parallel_barrier_args_t* args) {
  (void)args;
  return make_error(HETRT_STATUS_UNIMPLEMENTED, "the test plugin runs tasks one at a time: no barrier");
}
static hetrt_error_t* parallel_num_threads(hetrt_parallel_num_threads_args_t* args) {
  args->num_threads = 1;
  return NULL;
}
static const hetrt_parallel_api_t kParallelApi = {
    sizeof(hetrt_parallel_api_t),
    parallel_launch,
    parallel_barrier,
    parallel_num_threads,
};
static int32_t launches(hetrt_value_t* args, int32_t* codes, int32_t n, hetrt_value_t* ret, int32_t* ret_code,
                        void* resource) {
  (void)args, (void)codes, (void)n, (void)resource;
  ret->v_int64 = __atomic_load_n(&g_launches, __ATOMIC_SEQ_CST);
  *ret_code = HETRT_TYPE_INT;
  return 0;
}

static const char* const kTypeKeys[] = {"hetrt_test"};

/* A newer minor version appends fields; the core must ignore what it does not know. */
typedef struct {
  hetrt_plugin_api_t v2;
  void* field_from_the_future;
} extended_api_t;

/* One table, laid out as the ABI lists it. */
/* clang-format off */
static const extended_api_t kApi = {
    {
        sizeof(extended_api_t), TEST_ABI_MAJOR, TEST_ABI_MINOR, "test", "0.0.1",
        error_message, error_destroy, instance_create, instance_destroy, set_option,
        global_functions, NULL, 0, kTypeKeys, 1, NULL, &kModuleApi, &kParallelApi,
    },
    NULL,
};
/* clang-format on */

#ifndef TEST_NO_ENTRY
HETRT_PLUGIN_EXPORT const hetrt_plugin_api_t* hetrt_plugin_get_api(void) { return &kApi.v2; }
#else
HETRT_PLUGIN_EXPORT int not_a_plugin_entry(void) { return 0; }
#endif
