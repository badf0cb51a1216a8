// The inside of the fake CUDA driver (libcuda.so.1 for machines without a
// GPU), shared by its parts:
//   fake_device.cc         init, versions, errors, devices, primary contexts
//   fake_memory.cc         device / pinned memory (a limited total), copies
//   fake_streams.cc        streams (each runs its work in order on its own
//                          thread), the legacy NULL stream, events
//   fake_modules.cc        images (PTX, cubin, fatbin), functions, launches
//   fake_kernels.cc        host builds of the CUDA C kernels it can run
//   fake_proc_address.cc   cuGetProcAddress and the old variants
//   fake_personality.cc    the driver version (one library per version)
//
// It is as strict as a driver where the CUDA plugin could get something
// wrong: work is asynchronous (a missing synchronize or stream wait gives
// stale data and TSan reports), events are NOT_READY until reached, kernels
// fault on memory the device cannot reach and the fault is sticky, unknown
// kernels and wrong parameter sizes are refused, and a personality has only
// the entry points its driver version had.
//
// Configured by the environment (read when asked, never by device threads):
//   HETRT_FAKE_CUDA_DEVICES     number of devices (2, so that peer copies are tested)
//   HETRT_FAKE_CUDA_INIT        CUresult cuInit returns (0), e.g. 100: no device
//   HETRT_FAKE_CUDA_SM          compute capability x 10 (80)
//   HETRT_FAKE_CUDA_INTEGRATED  1: an integrated GPU (shares host memory)
//   HETRT_FAKE_CUDA_MEMORY_MIB  device memory per device (512: the conformance kit takes 256)
//   HETRT_FAKE_CUDA_NO_PROC_ADDRESS  1: cuGetProcAddress finds nothing (dlsym path)
//   HETRT_FAKE_CUDA_LOG         file that gets a line per launch, copy, wait, ...
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "cuda_driver_api.h"  // the plugin's declarations of the driver API
#include "fake_exports.h"

// The driver API's names for the fake's code, as cuda.h gives them to C code.
using namespace hetrt::cuda_api;

// Every export declared with the type of its variant's entry point: a
// definition whose signature is not the driver's does not compile, and
// cuda_api_match_test checks those types against the toolkit's.
extern "C" {
#define HETRT_FAKE_DECLARE_EXPORT(name, symbol, version) std::remove_pointer_t<PFN_##name##_v##version> symbol;
HETRT_FAKE_CUDA_EXPORTS(HETRT_FAKE_DECLARE_EXPORT)
#undef HETRT_FAKE_DECLARE_EXPORT
}

namespace fake_cuda {

// ---- Configuration and diagnostics

int EnvInt(const char* name, int fallback);
int NumDevices();
int Sm();  // compute capability x 10
bool Integrated();
uint64_t TotalMemory();  // bytes per device
// This library's driver version (its personality: fake_personality.cc).
int DriverVersion();
// The newest PTX ISA this driver's JIT reads, x 10 (12.4 reads PTX 8.4: 84).
int PtxIsa(int driver_version);
void Log(const std::string& line);
uint64_t NowNs();

// ---- Work on streams

// One point of a stream: done when the stream's thread reached it. An event
// record is one, and so is every "wait until here" (cuStreamSynchronize).
struct Mark {
  bool done = false;
  uint64_t ns = 0;  // when it was reached
};

// What a stream runs, in order: first waits for `after` (other streams'
// points), then runs `run` (a kernel, a copy: skipped once the context has a
// sticky error; returns CUDA_SUCCESS or the error the work caused) or, for a
// mark, reaches `mark`.
struct Work {
  std::vector<std::shared_ptr<Mark>> after = {};
  std::function<CUresult()> run = {};
  std::shared_ptr<Mark> mark = {};
};

// A stream's queue and the thread that runs it (a GPU's work queue).
struct Queue {
  int id = 0;  // in log lines: "stream=<id>"; the legacy streams are 0
  std::deque<Work> items;
  uint64_t submitted = 0, completed = 0;
  bool stop = false;
  std::thread thread;
};

struct Allocation {
  size_t size = 0;
  int device = 0;
  bool host = false;    // pinned host memory (reachable from every device)
  bool mapped = false;  // host memory mapped into the device's address space
};

}  // namespace fake_cuda

// Handles: what CUcontext, CUstream, ... point to in this driver.
struct CUctx_st {
  int device = 0;
  int retains = 0;
  std::vector<int> peers;           // devices whose memory this context may reach
  CUresult sticky = CUDA_SUCCESS;   // a fault of earlier work: every later call returns it
  CUstream_st* legacy = nullptr;    // the legacy NULL stream, made on first use
  std::vector<CUstream_st*> streams;  // live streams
};
struct CUstream_st {
  CUctx_st* ctx = nullptr;
  unsigned flags = 0;  // CU_STREAM_NON_BLOCKING: no implicit order with the legacy stream
  int priority = 0;
  std::shared_ptr<fake_cuda::Queue> queue;
};
struct CUevent_st {
  CUctx_st* ctx = nullptr;
  unsigned flags = 0;
  std::shared_ptr<fake_cuda::Mark> last;  // the latest record; NULL: never recorded
  int stream = 0;                         // where it was last recorded
  int id = 0;                             // in log lines: "event=<id>"
};

namespace fake_cuda {

// One lock for the driver's state; `changed` is signalled whenever a stream
// reaches something or gets work. Stream threads run work without the lock.
struct State {
  std::mutex mutex;
  std::condition_variable changed;
  bool initialized = false;
  CUctx_st contexts[8];
  std::map<uintptr_t, Allocation> allocations;
  uint64_t device_bytes[8] = {};  // device memory in use, per device
  int next_stream = 1, next_event = 1;
};
State& S();
using Lock = std::unique_lock<std::mutex>;

// The calling thread's current context.
extern thread_local CUctx_st* t_current;

CUresult NeedInit();
// CUDA_ERROR_INVALID_CONTEXT without a current context (or with one whose
// last retain was released: destroyed), else its sticky error.
CUresult NeedContext(Lock& lock);
// The context a stream belongs to (NULL: the current context's legacy stream).
inline CUctx_st* ContextOf(CUstream s) { return s ? s->ctx : t_current; }
inline int StreamId(CUstream s) { return s ? s->queue->id : 0; }

// The allocation holding address p, or NULL.
const Allocation* FindAllocation(uintptr_t p, uintptr_t* base);
// Whether `ctx`'s device can reach [p, p + n): its own device memory, a peer's
// once peer access is enabled, pinned host memory.
bool Reachable(const CUctx_st* ctx, uintptr_t p, size_t n);

// Queues work on `stream` of `ctx` (NULL: ctx's legacy stream, made now).
// The legacy stream waits for earlier work of ctx's blocking streams and they
// wait for its earlier work, as CUDA orders them.
CUresult Enqueue(Lock& lock, CUctx_st* ctx, CUstream stream, Work work);
// A mark after everything queued on `stream` so far.
std::shared_ptr<Mark> MarkNow(Lock& lock, CUctx_st* ctx, CUstream stream);
// Waits (the lock released meanwhile) until `mark` is reached.
void WaitFor(Lock& lock, const std::shared_ptr<Mark>& mark);
// Waits until every stream of `ctx` (NULL: of every context) ran what it has now.
void WaitIdle(Lock& lock, CUctx_st* ctx);
// Stops a stream's thread once its work is done, and joins it (lock released meanwhile).
void StopQueue(Lock& lock, const std::shared_ptr<Queue>& queue);

}  // namespace fake_cuda
