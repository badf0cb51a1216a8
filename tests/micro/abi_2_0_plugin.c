/* A plugin as one built against ABI 2.0 looks to a 2.1 core: its table ends
 * at `parallel`. What lies after it in memory (here a bogus whole_model
 * pointer) must never be read. */
#include <stddef.h>

#include "hetrt/plugin_abi.h"

struct hetrt_error {
  int unused;
};

static hetrt_error_t* error_message(hetrt_error_message_args_t* args) {
  args->message = "";
  args->code = HETRT_STATUS_OK;
  return NULL;
}
static hetrt_error_t* error_destroy(hetrt_error_destroy_args_t* args) {
  (void)args;
  return NULL;
}
static int g_instance;
static hetrt_error_t* instance_create(hetrt_instance_create_args_t* args) {
  args->instance = (hetrt_instance_t*)&g_instance;
  return NULL;
}
static hetrt_error_t* instance_destroy(hetrt_instance_destroy_args_t* args) {
  (void)args;
  return NULL;
}

/* One table, laid out as the ABI lists it. */
/* clang-format off */
static const hetrt_plugin_api_t kApi = {
    offsetof(hetrt_plugin_api_t, whole_model), 2, 0, "abi20", "0.0.1", error_message, error_destroy,
    instance_create, instance_destroy, NULL, NULL, NULL, 0, NULL, 0, NULL, NULL, NULL,
    (const hetrt_whole_model_api_t*)(uintptr_t)0x1, /* past struct_size */
};
/* clang-format on */

HETRT_PLUGIN_EXPORT const hetrt_plugin_api_t* hetrt_plugin_get_api(void) { return &kApi; }
