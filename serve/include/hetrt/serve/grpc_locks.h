// gRPC's locks are absl::Mutex, and Debian builds Abseil without NDEBUG: every
// lock, unlock and destruction of one then consults a process-wide deadlock
// graph behind a global lock (GraphCycles in a profile of `hetrt serve`, about
// 2.5 % of its CPU over gRPC at concurrency 16). A process that serves, and is
// not debugging gRPC itself, turns that check off once before it serves:
// `hetrt serve` and the protocol floor do.
#pragma once

namespace hetrt::serve {

void SkipGrpcDeadlockChecksForThisProcess();

}  // namespace hetrt::serve
