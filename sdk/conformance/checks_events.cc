// Streams and events in depth: distinct streams, an event ordering work
// across streams, events never recorded, timestamps in order and on the host
// clock, the current stream per thread and per instance.
#include <cstring>
#include <thread>

#include "device_checks.h"
#include "hetrt/base/dtype.h"

namespace hetrt::conformance {
namespace {

// The value of `result`, or a failure and T{}.
template <class T>
T ValueOrFail(Result<T> result) {
  EXPECT_TRUE(result.ok()) << result.status().message();
  return result.ok() ? std::move(result).value() : T{};
}

TEST(Streams, AreDistinctAndTheirCopiesAreDoneAtSynchronize) {
  HETRT_REQUIRE_DEVICE();
  HETRT_REQUIRE_CALL(stream_create);
  HETRT_REQUIRE_CALL(stream_synchronize);
  const DeviceClient c = Client();
  HETRT_CHECK_OK_AND_ASSIGN(hetrt_stream_t * first, c.NewStream());
  HETRT_CHECK_OK_AND_ASSIGN(hetrt_stream_t * second, c.NewStream(HETRT_STREAM_COPY));
  EXPECT_NE(first, nullptr);
  EXPECT_NE(first, second);
  const std::vector<uint8_t> source = Pattern(1000);
  std::vector<uint8_t> back(1000, 0);
  HETRT_CHECK_OK_AND_ASSIGN(auto buffer, c.Allocate(1000));
  HETRT_CHECK_OK(c.Copy(source.data(), 0, kHost, buffer.data, 0, Ctx().device, 1000, first, 0));
  HETRT_CHECK_OK(c.Copy(buffer.data, 0, Ctx().device, back.data(), 0, kHost, 1000, first, 0));
  HETRT_CHECK_OK(c.Synchronize(first));
  EXPECT_EQ(back, source);
  HETRT_CHECK_OK(c.Synchronize(nullptr));  // the default stream
  HETRT_CHECK_OK(c.DestroyStream(first));
  HETRT_CHECK_OK(c.DestroyStream(second));
  HETRT_CHECK_OK(c.Free(buffer.data));
}

// A large copy on a copy stream, then a small overwrite on a compute stream
// that waits for its event: the small write's bytes must win, every round.
TEST(Streams, AStreamWaitingForAnEventOrdersWorkAcrossStreams) {
  HETRT_REQUIRE_DEVICE();
  HETRT_REQUIRE_CALL(stream_create);
  HETRT_REQUIRE_CALL(event_create);
  HETRT_REQUIRE_CALL(stream_wait_event);
  HETRT_REQUIRE_CALL(event_query);
  const DeviceClient c = Client();
  constexpr size_t kBytes = 16 << 20;
  Apply(Ctx().profile.queued_copies);
  auto dev = Tensor::Empty({kBytes}, kU8, Memory());
  Apply(Ctx().profile.queued_copies_undo);
  ASSERT_TRUE(dev.ok()) << dev.status().message();
  HETRT_CHECK_OK_AND_ASSIGN(Tensor pinned, Tensor::Empty({kBytes}, kU8, Memory(HETRT_MEMORY_HOST_PINNED)));
  std::memset(pinned.data(), 1, kBytes);
  std::vector<uint8_t> small(4096, 7), back(kBytes, 0);
  HETRT_CHECK_OK_AND_ASSIGN(hetrt_stream_t * copy, c.NewStream(HETRT_STREAM_COPY));
  HETRT_CHECK_OK_AND_ASSIGN(hetrt_stream_t * compute, c.NewStream());
  HETRT_CHECK_OK_AND_ASSIGN(hetrt_event_t * done, c.NewEvent());
  for (int round = 0; round < 3; ++round) {
    HETRT_CHECK_OK(c.Copy(pinned.data(), 0, kHost, dev->data(), 0, Ctx().device, kBytes, copy, 0));
    HETRT_CHECK_OK(c.Record(done, copy));
    HETRT_CHECK_OK(c.WaitEvent(compute, done));
    HETRT_CHECK_OK(c.Copy(small.data(), 0, kHost, dev->data(), 0, Ctx().device, small.size(), compute, 0));
    HETRT_CHECK_OK(c.Copy(dev->data(), 0, Ctx().device, back.data(), 0, kHost, kBytes, compute, HETRT_COPY_BLOCKING));
    EXPECT_EQ(back[0], 7);
    EXPECT_EQ(back[4095], 7);
    EXPECT_EQ(back[4096], 1);
    EXPECT_EQ(back[kBytes - 1], 1);
  }
  int32_t complete = 0;
  HETRT_CHECK_OK(c.EventCall(c.api()->event_query, done, &complete));
  EXPECT_EQ(complete, 1);
  HETRT_CHECK_OK(c.EventCall(c.api()->event_destroy, done));
  HETRT_CHECK_OK(c.DestroyStream(copy));
  HETRT_CHECK_OK(c.DestroyStream(compute));
}

TEST(Streams, EventsNeverRecordedAreCompleteAndWaitingForThemDoesNothing) {
  HETRT_REQUIRE_DEVICE();
  HETRT_REQUIRE_CALL(event_create);
  HETRT_REQUIRE_CALL(event_query);
  HETRT_REQUIRE_CALL(event_synchronize);
  HETRT_REQUIRE_CALL(stream_wait_event);
  const DeviceClient c = Client();
  HETRT_CHECK_OK_AND_ASSIGN(hetrt_event_t * event, c.NewEvent());
  int32_t complete = 0;
  HETRT_CHECK_OK(c.EventCall(c.api()->event_query, event, &complete));
  EXPECT_EQ(complete, 1);
  HETRT_CHECK_OK(c.EventCall(c.api()->event_synchronize, event));
  HETRT_CHECK_OK(c.WaitEvent(nullptr, event));
  HETRT_CHECK_OK(c.Synchronize(nullptr));
  HETRT_CHECK_OK(c.EventCall(c.api()->event_destroy, event));
}

// Every call that acts on an event refuses a NULL one with INVALID_ARGUMENT
// (never a crash); destroying NULL does nothing, as free(NULL) does.
TEST(Streams, CallsOnANullEventAreRefusedAndDestroyingOneDoesNothing) {
  HETRT_REQUIRE_DEVICE();
  HETRT_REQUIRE_CALL(event_create);
  const DeviceClient c = Client();
  const hetrt_device_api_t* api = c.api();
  auto refused = [](const Status& status, const char* call) {
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << call << " on a NULL event: " << status.ToString();
  };
  if (api->event_record) refused(c.Record(nullptr, nullptr), "event_record");
  if (api->event_query) refused(c.EventCall(api->event_query, nullptr), "event_query");
  if (api->event_synchronize) refused(c.SynchronizeEvent(nullptr), "event_synchronize");
  if (api->event_timestamp) refused(c.Timestamp(nullptr).status(), "event_timestamp");
  if (api->stream_wait_event) refused(c.WaitEvent(nullptr, nullptr), "stream_wait_event");
  if (api->event_destroy) HETRT_CHECK_OK(c.DestroyEvent(nullptr));
}

// Events recorded one after another on a stream: complete once synchronized,
// timestamps in record order, elapsed time from first to last not negative,
// and both a stream and the default stream can wait for them.
TEST(Streams, EventsRecordedInOrderCompleteWithOrderedTimestamps) {
  HETRT_REQUIRE_DEVICE();
  HETRT_REQUIRE_CALL(stream_create);
  HETRT_REQUIRE_CALL(event_create);
  HETRT_REQUIRE_CALL(event_timestamp);
  HETRT_REQUIRE_CALL(event_elapsed_ms);
  const DeviceClient c = Client();
  HETRT_CHECK_OK_AND_ASSIGN(hetrt_stream_t * stream, c.NewStream());
  std::vector<hetrt_event_t*> events;
  for (int i = 0; i < 5; ++i) {
    HETRT_CHECK_OK_AND_ASSIGN(hetrt_event_t * event, c.NewEvent(HETRT_EVENT_TIMING));
    HETRT_CHECK_OK(c.Record(event, stream));
    events.push_back(event);
  }
  uint64_t previous = 0;
  for (hetrt_event_t* event : events) {
    HETRT_CHECK_OK(c.EventCall(c.api()->event_synchronize, event));
    int32_t complete = 0;
    HETRT_CHECK_OK(c.EventCall(c.api()->event_query, event, &complete));
    EXPECT_EQ(complete, 1);
    HETRT_CHECK_OK_AND_ASSIGN(uint64_t ns, c.Timestamp(event));
    EXPECT_GE(ns, previous) << "timestamps follow the record order";
    previous = ns;
  }
  HETRT_CHECK_OK_AND_ASSIGN(double ms, c.ElapsedMs(events.front(), events.back()));
  EXPECT_GE(ms, 0.0);
  HETRT_CHECK_OK(c.WaitEvent(stream, events.front()));
  HETRT_CHECK_OK(c.WaitEvent(nullptr, events.back()));
  for (hetrt_event_t* event : events) HETRT_CHECK_OK(c.EventCall(c.api()->event_destroy, event));
  HETRT_CHECK_OK(c.DestroyStream(stream));
}

TEST(Streams, EventTimestampsMapOntoTheHostClock) {
  HETRT_REQUIRE_DEVICE();
  HETRT_REQUIRE_CALL(stream_create);
  HETRT_REQUIRE_CALL(event_timestamp);
  HETRT_REQUIRE_CALL(device_clock);
  constexpr size_t kBytes = 8 << 20;
  Apply(Ctx().profile.queued_copies);
  auto dev = Tensor::Empty({kBytes}, kU8, Memory());
  Apply(Ctx().profile.queued_copies_undo);
  ASSERT_TRUE(dev.ok()) << dev.status().message();
  CheckTimestampsOnTheHostClock(Client(), dev->data(), kBytes);
}

TEST(Streams, CurrentStreamIsPerThreadAndPerInstance) {
  HETRT_REQUIRE_DEVICE();
  HETRT_REQUIRE_CALL(stream_create);
  HETRT_REQUIRE_CALL(stream_set_current);
  HETRT_REQUIRE_CALL(stream_get_current);
  const DeviceClient c = Client();
  HETRT_CHECK_OK_AND_ASSIGN(hetrt_stream_t * first, c.NewStream());
  HETRT_CHECK_OK_AND_ASSIGN(hetrt_stream_t * second, c.NewStream());
  EXPECT_EQ(ValueOrFail<hetrt_stream_t*>(c.CurrentStream()), nullptr) << "initially the default stream";
  hetrt_stream_t* previous = first;
  HETRT_CHECK_OK(c.SetCurrentStream(first, &previous));
  EXPECT_EQ(previous, nullptr);
  EXPECT_EQ(ValueOrFail<hetrt_stream_t*>(c.CurrentStream()), first);
  std::thread([&] {
    EXPECT_EQ(ValueOrFail<hetrt_stream_t*>(c.CurrentStream()), nullptr) << "another thread's current stream leaked in";
    hetrt_stream_t* replaced = first;
    EXPECT_TRUE(c.SetCurrentStream(second, &replaced).ok());
    EXPECT_EQ(replaced, nullptr);
    EXPECT_EQ(ValueOrFail<hetrt_stream_t*>(c.CurrentStream()), second);
    EXPECT_TRUE(c.SetCurrentStream(nullptr, &replaced).ok());
    EXPECT_EQ(replaced, second);
  }).join();
  EXPECT_EQ(ValueOrFail<hetrt_stream_t*>(c.CurrentStream()), first);
  {
    auto own = AnotherRegistry();
    HETRT_CHECK_OK_AND_ASSIGN(Plugin * other, own->ForDevice(Ctx().device));
    EXPECT_EQ(ValueOrFail<hetrt_stream_t*>(DeviceClient(other, Ctx().device).CurrentStream()), nullptr)
        << "another instance's current stream leaked in";
  }
  HETRT_CHECK_OK(c.SetCurrentStream(second, &previous));
  EXPECT_EQ(previous, first) << "set returns the previous stream";
  HETRT_CHECK_OK(c.SetCurrentStream(nullptr, &previous));
  EXPECT_EQ(previous, second);
  for (hetrt_stream_t* stream : {first, second}) HETRT_CHECK_OK(c.DestroyStream(stream));
}

}  // namespace
}  // namespace hetrt::conformance
