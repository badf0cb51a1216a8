/* A minimal plugin in plain C, built in several variants to test the plugin
 * host: TEST_ABI_MAJOR / TEST_ABI_MINOR set the version it claims, and
 * TEST_NO_ENTRY leaves the entry symbol out. It loads blobs of type_key
 * "hetrt_test" (u64 length + that many bytes) whose one function adds 1. */
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
static const char* error_message(const hetrt_error_t* e) { return e->message; }
static hetrt_status_code_t error_code(const hetrt_error_t* e) { return e->code; }
static void error_destroy(hetrt_error_t* e) { free(e); }

static const hetrt_host_api_t* g_host;
static hetrt_error_t* initialize(const hetrt_host_api_t* host) {
  g_host = host;
  return NULL;
}
static void shutdown(void) {}
static hetrt_error_t* set_option(const char* key, const char* value) {
  (void)value;
  (void)key;
  return make_error(HETRT_STATUS_INVALID_ARGUMENT, "test plugin takes no options");
}

struct hetrt_plugin_module {
  uint64_t payload_size;
};

static int32_t add_one(hetrt_value_t* args, int32_t* codes, int32_t n, hetrt_value_t* ret,
                       int32_t* ret_code, void* resource) {
  (void)resource;
  if (n != 1 || codes[0] != HETRT_TYPE_INT) {
    g_host->set_last_error("add_one takes one int");
    return -1;
  }
  ret->v_int64 = args[0].v_int64 + 1;
  *ret_code = HETRT_TYPE_INT;
  return 0;
}

static int32_t answer(hetrt_value_t* args, int32_t* codes, int32_t n, hetrt_value_t* ret,
                      int32_t* ret_code, void* resource) {
  (void)args, (void)codes, (void)n, (void)resource;
  ret->v_int64 = 42;
  *ret_code = HETRT_TYPE_INT;
  return 0;
}

static hetrt_error_t* module_load(hetrt_module_load_args_t* args) {
  uint64_t n;
  if (args->size < 8) return make_error(HETRT_STATUS_DATA_LOSS, "hetrt_test blob truncated");
  memcpy(&n, args->data, 8);
  if (n > args->size - 8) return make_error(HETRT_STATUS_DATA_LOSS, "hetrt_test payload truncated");
  args->module = (hetrt_plugin_module_t*)calloc(1, sizeof(hetrt_plugin_module_t));
  args->module->payload_size = n;
  args->consumed = 8 + n;
  return NULL;
}

static hetrt_error_t* module_get_function(hetrt_plugin_module_t* m, const char* name,
                                          hetrt_packed_func_t* out, int32_t* found) {
  (void)m;
  *found = strcmp(name, "test_add_one") == 0;
  if (*found) {
    out->call = add_one;
    out->resource = NULL;
  }
  return NULL;
}

static size_t module_list_functions(hetrt_plugin_module_t* m, const char** names, size_t cap) {
  (void)m;
  if (cap > 0) names[0] = "test_add_one";
  return 1;
}

static void module_destroy(hetrt_plugin_module_t* m) { free(m); }

static const hetrt_module_api_t kModuleApi = {
    sizeof(hetrt_module_api_t), module_load, module_get_function, module_list_functions,
    NULL, module_destroy,
};

static const char* const kTypeKeys[] = {"hetrt_test"};
static const hetrt_global_function_t kGlobals[] = {{"__hetrt_test_answer", {answer, NULL}}};

/* A newer minor version appends fields; the core must ignore what it does not know. */
typedef struct {
  hetrt_plugin_api_t v1;
  void* field_from_the_future;
} extended_api_t;

static const extended_api_t kApi = {
    {
        sizeof(extended_api_t), TEST_ABI_MAJOR, TEST_ABI_MINOR, "test", "0.0.1",
        error_message, error_code, error_destroy, initialize, shutdown, set_option,
        NULL, 0, kTypeKeys, 1, kGlobals, 1, NULL, &kModuleApi, NULL,
    },
    NULL,
};

#ifndef TEST_NO_ENTRY
HETRT_PLUGIN_EXPORT const hetrt_plugin_api_t* hetrt_plugin_get_api(void) { return &kApi.v1; }
#else
HETRT_PLUGIN_EXPORT int not_a_plugin_entry(void) { return 0; }
#endif
