#include "hetrt/serve/grpc_locks.h"

#include <absl/synchronization/mutex.h>

namespace hetrt::serve {

void SkipGrpcDeadlockChecksForThisProcess() { absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore); }

}  // namespace hetrt::serve
