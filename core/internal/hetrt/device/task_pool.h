// The host task pool of a plugin's parallel table (TVMBackendParallelLaunch),
// in TVM's calling convention: 0, or -1 with the message in the thread's last
// error. On the hot path of every parallel CPU kernel, so inline.
#pragma once

#include "hetrt/base/last_error.h"
#include "hetrt/device/plugin.h"

namespace hetrt {

// Thread contract: thread-safe (any thread may launch; the plugin's pool shares itself out).
class TaskPool {
 public:
  explicit TaskPool(Plugin* plugin) : plugin_(plugin) {}

  int Launch(hetrt_parallel_lambda_t lambda, void* cdata, int32_t num_task) const {
    auto args = AbiArgs<hetrt_parallel_launch_args_t>();
    args.self = plugin_->instance();
    args.lambda = lambda;
    args.cdata = cdata;
    args.num_task = num_task;
    if (hetrt_error_t* error = plugin_->parallel_api()->launch(&args)) [[unlikely]]
      return Report(error);
    return args.failed_task >= 0 ? -1 : 0;  // the task reported its message
  }

  int Barrier(int32_t task_id, hetrt_parallel_group_env_t* env) const {
    auto args = AbiArgs<hetrt_parallel_barrier_args_t>();
    args.self = plugin_->instance();
    args.task_id = task_id;
    args.env = env;
    if (hetrt_error_t* error = plugin_->parallel_api()->barrier(&args)) [[unlikely]]
      return Report(error);
    return 0;
  }

 private:
  int Report(hetrt_error_t* error) const {
    SetLastError(plugin_->Consume(error).message().c_str());
    return -1;
  }
  Plugin* plugin_;
};

}  // namespace hetrt
