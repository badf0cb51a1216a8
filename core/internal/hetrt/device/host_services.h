// What the core gives every plugin instance at instance_create: the thread's
// last-error channel and a log sink.
#pragma once

#include "hetrt/plugin_abi.h"

namespace hetrt {

const hetrt_host_api_t* HostServices();

}  // namespace hetrt
