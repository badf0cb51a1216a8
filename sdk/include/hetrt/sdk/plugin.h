// Everything a C++ plugin author uses from the hetrt SDK (header-only; the ABI
// across dlopen stays the C header hetrt/plugin_abi.h). docs/plugin-abi.md
// gives the rules these helpers implement; examples/plugin-template uses them.
#pragma once

#include "hetrt/plugin_abi.h"
#include "hetrt/sdk/clock.h"
#include "hetrt/sdk/copy_sides.h"
#include "hetrt/sdk/device_table.h"
#include "hetrt/sdk/entry.h"
#include "hetrt/sdk/error.h"
#include "hetrt/sdk/instance.h"
#include "hetrt/sdk/memory_counters.h"
#include "hetrt/sdk/module.h"
#include "hetrt/sdk/options.h"
#include "hetrt/sdk/plugin_table.h"
#include "hetrt/sdk/thread_current.h"
#include "hetrt/sdk/tvm_blob.h"
#include "hetrt/sdk/workspace_pool.h"
