// How a serving process's threads are scheduled. `hetrt serve` runs all of
// them SCHED_BATCH by default, as `chrt -b 0` would: a thread that wakes (a
// request arrived, a device stage ended) then does not preempt the thread
// running on its core, but waits for that thread's time slice to end. On a
// server whose cores are busy with requests this means fewer context
// switches, and it lets instances of a model overlap their devices: one
// request's CPU stage runs to its end and hands its device the next stage
// instead of being time-sliced with another request's CPU stage.
// SCHED_BATCH needs no privilege: it never raises a priority.
#pragma once

#include "hetrt/base/status.h"

namespace hetrt::serve {

// Moves every thread of this process to SCHED_BATCH; threads started later
// inherit it from the threads that start them. An error names the thread the
// kernel refused (the others are moved anyway).
Status UseBatchSchedulingForThisProcess();

}  // namespace hetrt::serve
