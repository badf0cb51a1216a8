/* A whole-model plugin as one built against ABI 2.1 looks to a 2.2 core: its
 * whole-model table ends at `project_run`, and what lies after it in memory
 * (here a bogus `sample` pointer) must never be read. Every model call is an
 * error value (it opens no models); the conformance kit skips its sample
 * checks, naming 2.2, and passes the rest. */
#include <stddef.h>
#include <stdio.h>

#include "hetrt/plugin_abi.h"

struct hetrt_error {
  hetrt_status_code_t code;
  const char* message;
};

static struct hetrt_error g_no_models = {HETRT_STATUS_INVALID_ARGUMENT, "abi21: this plugin opens no models"};

static hetrt_error_t* error_message(hetrt_error_message_args_t* args) {
  args->message = args->error ? args->error->message : "";
  args->code = args->error ? args->error->code : HETRT_STATUS_OK;
  return NULL;
}
#define IGNORE(name, type)                 \
  static hetrt_error_t* name(type* args) { \
    (void)args;                            \
    return NULL;                           \
  }
IGNORE(error_destroy, hetrt_error_destroy_args_t) /* the errors are static */
IGNORE(instance_destroy, hetrt_instance_destroy_args_t)
IGNORE(destroy, hetrt_whole_model_args_t)

static hetrt_error_t* instance_create(hetrt_instance_create_args_t* args) {
  static int instance;
  args->instance = (hetrt_instance_t*)&instance;
  return NULL;
}
static hetrt_error_t* set_option(hetrt_set_option_args_t* args) {
  /* The message names the key, as every plugin's must (one caller at a time here). */
  static char text[256];
  static struct hetrt_error unknown = {HETRT_STATUS_NOT_FOUND, text};
  snprintf(text, sizeof text, "abi21: no option '%s' (it takes none)", args->key ? args->key : "");
  return &unknown;
}
static hetrt_error_t* accepts(hetrt_whole_model_accepts_args_t* args) {
  args->accepted = 0;
  args->reason = "abi21 opens no models";
  return NULL;
}
static hetrt_error_t* create(hetrt_whole_model_create_args_t* args) {
  (void)args;
  return &g_no_models;
}
#define REFUSE(name, type)                 \
  static hetrt_error_t* name(type* args) { \
    (void)args;                            \
    return &g_no_models;                   \
  }
REFUSE(io_count, hetrt_whole_model_io_count_args_t)
REFUSE(io_info, hetrt_whole_model_io_info_args_t)
REFUSE(set_input, hetrt_whole_model_tensor_args_t)
REFUSE(run, hetrt_whole_model_args_t)
REFUSE(get_output, hetrt_whole_model_tensor_args_t)
REFUSE(report, hetrt_whole_model_report_args_t)

static const char* const kDevices[] = {"abi21"};
static const char* const kFormats[] = {"none"};
/* One table, laid out as the ABI lists it. */
/* clang-format off */
static const hetrt_whole_model_api_t kWholeModel = {
    offsetof(hetrt_whole_model_api_t, sample), kDevices, 1, NULL, 0, NULL, 0, kFormats, 1,
    accepts, create, destroy, io_count, io_info, set_input, run, get_output, report, NULL, NULL,
    (hetrt_error_t * (*)(hetrt_whole_model_sample_args_t*))(uintptr_t)0x1, /* past struct_size */
};
/* clang-format on */

/* One table, laid out as the ABI lists it. */
/* clang-format off */
static const hetrt_plugin_api_t kApi = {
    sizeof(hetrt_plugin_api_t), 2, 1, "abi21", "0.0.1", error_message, error_destroy,
    instance_create, instance_destroy, set_option, NULL, NULL, 0, NULL, 0, NULL, NULL, NULL, &kWholeModel,
};
/* clang-format on */

HETRT_PLUGIN_EXPORT const hetrt_plugin_api_t* hetrt_plugin_get_api(void) { return &kApi; }
