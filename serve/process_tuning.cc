#include "hetrt/serve/process_tuning.h"

#include <absl/synchronization/mutex.h>
#include <malloc.h>

#include <cstdlib>
#include <cstring>

namespace hetrt::serve {

void SkipGrpcDeadlockChecksForThisProcess() { absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore); }

void KeepLargeBuffersForThisProcess() {
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables != nullptr && std::strstr(tunables, "glibc.malloc.") != nullptr) return;
  mallopt(M_MMAP_THRESHOLD, static_cast<int>(kKeptBufferBytes));
  mallopt(M_TRIM_THRESHOLD, static_cast<int>(kKeptFreeBytes));
}

}  // namespace hetrt::serve
