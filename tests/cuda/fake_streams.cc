// The fake driver's streams and events. Every stream (and each context's
// legacy NULL stream) is a queue run in order by a thread of its own, as a
// GPU runs a stream's work: calls return before the work is done, events are
// NOT_READY until their stream reaches them, cuStreamWaitEvent makes a stream
// wait for the other stream up to that event and no further, and only
// synchronizing calls block. A fault of earlier work (fake_kernels.cc) is
// sticky: the context's later work is skipped (its marks are still reached,
// so nothing waits forever) and every later call returns the error.
#include <algorithm>
#include <string>
#include <utility>

#include "fake_driver.h"

namespace fake_cuda {
namespace {

void RunQueue(CUctx_st* ctx, std::shared_ptr<Queue> q) {
  State& s = S();
  Lock lock(s.mutex);
  for (;;) {
    s.changed.wait(lock, [&] { return q->stop || !q->items.empty(); });
    if (q->items.empty()) return;
    Work work = std::move(q->items.front());
    q->items.pop_front();
    for (const auto& mark : work.after) s.changed.wait(lock, [&] { return mark->done; });
    if (work.mark) {
      work.mark->ns = NowNs();
      work.mark->done = true;
    } else if (work.run && ctx->sticky == CUDA_SUCCESS) {
      lock.unlock();
      const CUresult result = work.run();
      lock.lock();
      if (result != CUDA_SUCCESS && ctx->sticky == CUDA_SUCCESS) ctx->sticky = result;
    }
    ++q->completed;
    s.changed.notify_all();
  }
}

std::shared_ptr<Queue> StartQueue(CUctx_st* ctx, int id) {
  auto q = std::make_shared<Queue>();
  q->id = id;
  q->thread = std::thread(RunQueue, ctx, q);
  return q;
}

bool Pending(const CUstream_st* s) { return s && s->queue->submitted > s->queue->completed; }
bool Blocking(const CUstream_st* s) { return (s->flags & CU_STREAM_NON_BLOCKING) == 0; }

void Push(Lock&, CUstream_st* s, Work work) {
  s->queue->items.push_back(std::move(work));
  ++s->queue->submitted;
  S().changed.notify_all();
}

std::shared_ptr<Mark> PushMark(Lock& lock, CUstream_st* s) {
  auto mark = std::make_shared<Mark>();
  Push(lock, s, Work{{}, nullptr, mark});
  return mark;
}

}  // namespace

CUresult Enqueue(Lock& lock, CUctx_st* ctx, CUstream stream, Work work) {
  if (stream == nullptr) {
    if (ctx->legacy == nullptr) {
      try {
        ctx->legacy = new CUstream_st{ctx, 0, 0, StartQueue(ctx, 0)};
      } catch (const std::system_error&) {
        return CUDA_ERROR_OUT_OF_MEMORY;
      }
    }
    for (CUstream_st* other : ctx->streams)
      if (Blocking(other) && Pending(other)) work.after.push_back(PushMark(lock, other));
    stream = ctx->legacy;
  } else if (Blocking(stream) && Pending(ctx->legacy)) {
    work.after.push_back(PushMark(lock, ctx->legacy));
  }
  Push(lock, stream, std::move(work));
  return CUDA_SUCCESS;
}

std::shared_ptr<Mark> MarkNow(Lock& lock, CUctx_st* ctx, CUstream stream) {
  auto mark = std::make_shared<Mark>();
  if (Enqueue(lock, ctx, stream, Work{{}, nullptr, mark}) != CUDA_SUCCESS) mark->done = true;
  return mark;
}

void WaitFor(Lock& lock, const std::shared_ptr<Mark>& mark) {
  S().changed.wait(lock, [&] { return mark->done; });
}

void WaitIdle(Lock& lock, CUctx_st* ctx) {
  std::vector<std::shared_ptr<Mark>> marks;
  for (CUctx_st& c : S().contexts) {
    if (ctx != nullptr && &c != ctx) continue;
    for (CUstream_st* s : c.streams)
      if (Pending(s)) marks.push_back(PushMark(lock, s));
    if (Pending(c.legacy)) marks.push_back(PushMark(lock, c.legacy));
  }
  for (const auto& mark : marks) WaitFor(lock, mark);
}

void StopQueue(Lock& lock, const std::shared_ptr<Queue>& queue) {
  queue->stop = true;
  S().changed.notify_all();
  lock.unlock();
  queue->thread.join();
  lock.lock();
}

}  // namespace fake_cuda

using namespace fake_cuda;

namespace {

CUresult CreateStream(CUstream* stream, unsigned flags, int priority) {
  Lock lock(S().mutex);
  if (CUresult r = NeedContext(lock)) return r;
  if (stream == nullptr || (flags & ~unsigned{CU_STREAM_NON_BLOCKING}) != 0) return CUDA_ERROR_INVALID_VALUE;
  auto s = std::make_unique<CUstream_st>();
  s->ctx = t_current;
  s->flags = flags;
  s->priority = std::clamp(priority, -5, 0);  // the driver clamps to cuCtxGetStreamPriorityRange
  try {
    s->queue = StartQueue(t_current, S().next_stream++);
  } catch (const std::system_error&) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  Log("stream " + std::to_string(s->queue->id) + " cuda:" + std::to_string(t_current->device) +
      " priority=" + std::to_string(s->priority) + ((flags & CU_STREAM_NON_BLOCKING) ? " non-blocking" : " blocking"));
  t_current->streams.push_back(s.get());
  *stream = s.release();
  return CUDA_SUCCESS;
}

// Event calls run with the event's context current (stricter than a driver).
CUresult NeedEventContext(Lock& lock, CUevent event) {
  if (event == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (t_current != event->ctx) return CUDA_ERROR_INVALID_CONTEXT;
  return NeedContext(lock);
}

CUresult ElapsedTime(float* ms, CUevent start, CUevent end, bool with_sticky) {
  Lock lock(S().mutex);
  if (start == nullptr || end == nullptr || ms == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (t_current != start->ctx || t_current != end->ctx) return CUDA_ERROR_INVALID_CONTEXT;
  if (with_sticky && t_current->sticky) return t_current->sticky;
  if (!start->last || !end->last) return CUDA_ERROR_INVALID_HANDLE;
  if ((start->flags | end->flags) & CU_EVENT_DISABLE_TIMING) return CUDA_ERROR_INVALID_HANDLE;
  if (!start->last->done || !end->last->done) return CUDA_ERROR_NOT_READY;
  *ms = static_cast<float>((static_cast<double>(end->last->ns) - static_cast<double>(start->last->ns)) / 1e6);
  Log(std::string("elapsed ") + (with_sticky ? "cuEventElapsedTime" : "cuEventElapsedTime_v2") +
      " start=" + std::to_string(start->id) + " end=" + std::to_string(end->id));
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuStreamCreate(CUstream* stream, unsigned int flags) { return CreateStream(stream, flags, 0); }

CUresult cuStreamCreateWithPriority(CUstream* stream, unsigned int flags, int priority) {
  return CreateStream(stream, flags, priority);
}

// Its work still completes first, as on a GPU.
CUresult cuStreamDestroy_v2(CUstream stream) {
  if (stream == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  Lock lock(S().mutex);
  CUctx_st* ctx = stream->ctx;
  auto& streams = ctx->streams;
  auto it = std::find(streams.begin(), streams.end(), stream);
  if (it == streams.end()) return CUDA_ERROR_INVALID_HANDLE;
  streams.erase(it);
  StopQueue(lock, stream->queue);
  delete stream;
  return ctx->sticky;
}

CUresult cuStreamSynchronize(CUstream stream) {
  Lock lock(S().mutex);
  CUctx_st* ctx = ContextOf(stream);
  if (ctx == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  // For the legacy stream (nullptr) the mark covers its work and that of the
  // blocking streams before it.
  WaitFor(lock, MarkNow(lock, ctx, stream));
  return ctx->sticky;
}

// Later work on `stream` waits until the event's stream reached the event:
// not for what that stream got after it.
CUresult cuStreamWaitEvent(CUstream stream, CUevent event, unsigned int flags) {
  if (event == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  Lock lock(S().mutex);
  CUctx_st* ctx = ContextOf(stream);
  if (ctx == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  if (ctx->sticky) return ctx->sticky;
  Log("wait stream=" + std::to_string(StreamId(stream)) + " for stream=" + std::to_string(event->stream));
  if (!event->last || event->last->done) return CUDA_SUCCESS;
  return Enqueue(lock, ctx, stream, Work{{event->last}, nullptr, nullptr});
}

CUresult cuEventCreate(CUevent* event, unsigned int flags) {
  Lock lock(S().mutex);
  if (CUresult r = NeedContext(lock)) return r;
  if (event == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *event = new CUevent_st{t_current, flags, nullptr, 0, S().next_event++};
  return CUDA_SUCCESS;
}

// A record still pending completes without it.
CUresult cuEventDestroy_v2(CUevent event) {
  if (event == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  Lock lock(S().mutex);
  const CUresult sticky = event->ctx->sticky;
  delete event;
  return sticky;
}

CUresult cuEventRecord(CUevent event, CUstream stream) {
  if (event == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  Lock lock(S().mutex);
  CUctx_st* ctx = ContextOf(stream);
  if (ctx == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  if (ctx != event->ctx) return CUDA_ERROR_INVALID_HANDLE;  // an event and its stream share a context
  if (ctx->sticky) return ctx->sticky;
  auto mark = std::make_shared<Mark>();
  if (CUresult r = Enqueue(lock, ctx, stream, Work{{}, nullptr, mark})) return r;
  event->last = std::move(mark);
  event->stream = StreamId(stream);
  Log("record stream=" + std::to_string(event->stream) + " event=" + std::to_string(event->id));
  return CUDA_SUCCESS;
}

CUresult cuEventQuery(CUevent event) {
  Lock lock(S().mutex);
  if (CUresult r = NeedEventContext(lock, event)) return r;
  return !event->last || event->last->done ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult cuEventSynchronize(CUevent event) {
  Lock lock(S().mutex);
  if (CUresult r = NeedEventContext(lock, event)) return r;
  if (event->last) WaitFor(lock, event->last);
  return event->ctx->sticky;
}

// The 2.0 variant reports a fault of earlier work, as every call does; the
// 12.8 one need not ("not guaranteed to return the latest errors").
CUresult cuEventElapsedTime(float* ms, CUevent start, CUevent end) { return ElapsedTime(ms, start, end, true); }
CUresult cuEventElapsedTime_v2(float* ms, CUevent start, CUevent end) { return ElapsedTime(ms, start, end, false); }

}  // extern "C"
