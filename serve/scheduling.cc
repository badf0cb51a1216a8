#include "hetrt/serve/scheduling.h"

#include <sched.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>

namespace hetrt::serve {

Status UseBatchSchedulingForThisProcess() {
  sched_param param{};
  param.sched_priority = 0;
  Status result = OkStatus();
  std::error_code error;
  // Thread ids as /proc lists them: sched_setscheduler takes a thread id (a
  // pid would move only the main thread).
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", error)) {
    const std::string tid = task.path().filename().string();
    if (::sched_setscheduler(std::stoi(tid), SCHED_BATCH, &param) != 0 && errno != ESRCH && result.ok())
      result = Unavailable("cannot run thread " + tid + " SCHED_BATCH: " + std::strerror(errno));
  }
  if (error) return Unavailable("cannot list this process's threads (/proc/self/task): " + error.message());
  return result;
}

}  // namespace hetrt::serve
