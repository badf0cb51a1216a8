// Streams, events, clocks and the current stream on every backend.
#include <cstring>
#include <thread>

#include "device_suite.h"

namespace hetrt::device_suite {
namespace {

using Streams = DeviceSuite;
INSTANTIATE_TEST_SUITE_P(Backends, Streams, ::testing::ValuesIn(AllBackends()), BackendName);

TEST_P(Streams, AreDistinctAndTheirCopiesAreDoneAtSynchronize) {
  const conformance::DeviceClient c = client();
  HETRT_ASSERT_OK_AND_ASSIGN(hetrt_stream_t * first, c.NewStream());
  HETRT_ASSERT_OK_AND_ASSIGN(hetrt_stream_t * second, c.NewStream(HETRT_STREAM_COPY));
  EXPECT_NE(first, nullptr);
  EXPECT_NE(first, second);
  const std::vector<uint8_t> source = Pattern(1000);
  std::vector<uint8_t> back(1000, 0);
  HETRT_ASSERT_OK_AND_ASSIGN(auto buffer, c.Allocate(1000));
  HETRT_ASSERT_OK(c.Copy(source.data(), 0, kHost, buffer.data, 0, device(), 1000, first, 0));
  HETRT_ASSERT_OK(c.Copy(buffer.data, 0, device(), back.data(), 0, kHost, 1000, first, 0));
  HETRT_ASSERT_OK(c.Synchronize(first));
  EXPECT_EQ(back, source);
  HETRT_ASSERT_OK(c.Synchronize(nullptr));  // the default stream
  HETRT_ASSERT_OK(c.DestroyStream(first));
  HETRT_ASSERT_OK(c.DestroyStream(second));
  HETRT_ASSERT_OK(c.Free(buffer.data));
}

// A large copy on a copy stream, then a small overwrite on a compute stream
// that waits for its event: the small write's bytes must win, every round.
TEST_P(Streams, AStreamWaitingForAnEventOrdersWorkAcrossStreams) {
  const conformance::DeviceClient c = client();
  constexpr size_t kBytes = 16 << 20;
  Apply(backend().queued_copies);
  auto dev = Tensor::Empty({kBytes}, kU8, memory());
  Apply(backend().queued_copies_undo);
  ASSERT_TRUE(dev.ok()) << dev.status().message();
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor pinned, Tensor::Empty({kBytes}, kU8, memory(HETRT_MEMORY_HOST_PINNED)));
  std::memset(pinned.data(), 1, kBytes);
  std::vector<uint8_t> small(4096, 7), back(kBytes, 0);
  HETRT_ASSERT_OK_AND_ASSIGN(hetrt_stream_t * copy, c.NewStream(HETRT_STREAM_COPY));
  HETRT_ASSERT_OK_AND_ASSIGN(hetrt_stream_t * compute, c.NewStream());
  HETRT_ASSERT_OK_AND_ASSIGN(hetrt_event_t * done, c.NewEvent());
  for (int round = 0; round < 3; ++round) {
    HETRT_ASSERT_OK(c.Copy(pinned.data(), 0, kHost, dev->data(), 0, device(), kBytes, copy, 0));
    HETRT_ASSERT_OK(c.Record(done, copy));
    HETRT_ASSERT_OK(c.WaitEvent(compute, done));
    HETRT_ASSERT_OK(c.Copy(small.data(), 0, kHost, dev->data(), 0, device(), small.size(), compute, 0));
    HETRT_ASSERT_OK(c.Copy(dev->data(), 0, device(), back.data(), 0, kHost, kBytes, compute, HETRT_COPY_BLOCKING));
    EXPECT_EQ(back[0], 7);
    EXPECT_EQ(back[4095], 7);
    EXPECT_EQ(back[4096], 1);
    EXPECT_EQ(back[kBytes - 1], 1);
  }
  int32_t complete = 0;
  HETRT_ASSERT_OK(c.EventCall(c.api()->event_query, done, &complete));
  EXPECT_EQ(complete, 1);
  HETRT_ASSERT_OK(c.EventCall(c.api()->event_destroy, done));
  HETRT_ASSERT_OK(c.DestroyStream(copy));
  HETRT_ASSERT_OK(c.DestroyStream(compute));
}

TEST_P(Streams, EventsNeverRecordedAreCompleteAndWaitingForThemDoesNothing) {
  const conformance::DeviceClient c = client();
  HETRT_ASSERT_OK_AND_ASSIGN(hetrt_event_t * event, c.NewEvent());
  int32_t complete = 0;
  HETRT_ASSERT_OK(c.EventCall(c.api()->event_query, event, &complete));
  EXPECT_EQ(complete, 1);
  HETRT_ASSERT_OK(c.EventCall(c.api()->event_synchronize, event));
  HETRT_ASSERT_OK(c.WaitEvent(nullptr, event));
  HETRT_ASSERT_OK(c.Synchronize(nullptr));
  HETRT_ASSERT_OK(c.EventCall(c.api()->event_destroy, event));
}

// Events recorded one after another on a stream: complete once synchronized,
// timestamps in record order, elapsed time from first to last not negative,
// and both a stream and the default stream can wait for them.
TEST_P(Streams, EventsRecordedInOrderCompleteWithOrderedTimestamps) {
  const conformance::DeviceClient c = client();
  HETRT_ASSERT_OK_AND_ASSIGN(hetrt_stream_t * stream, c.NewStream());
  std::vector<hetrt_event_t*> events;
  for (int i = 0; i < 5; ++i) {
    HETRT_ASSERT_OK_AND_ASSIGN(hetrt_event_t * event, c.NewEvent(HETRT_EVENT_TIMING));
    HETRT_ASSERT_OK(c.Record(event, stream));
    events.push_back(event);
  }
  uint64_t previous = 0;
  for (hetrt_event_t* event : events) {
    HETRT_ASSERT_OK(c.EventCall(c.api()->event_synchronize, event));
    int32_t complete = 0;
    HETRT_ASSERT_OK(c.EventCall(c.api()->event_query, event, &complete));
    EXPECT_EQ(complete, 1);
    HETRT_ASSERT_OK_AND_ASSIGN(uint64_t ns, c.Timestamp(event));
    EXPECT_GE(ns, previous) << "timestamps follow the record order";
    previous = ns;
  }
  HETRT_ASSERT_OK_AND_ASSIGN(double ms, c.ElapsedMs(events.front(), events.back()));
  EXPECT_GE(ms, 0.0);
  HETRT_ASSERT_OK(c.WaitEvent(stream, events.front()));
  HETRT_ASSERT_OK(c.WaitEvent(nullptr, events.back()));
  for (hetrt_event_t* event : events) HETRT_ASSERT_OK(c.EventCall(c.api()->event_destroy, event));
  HETRT_ASSERT_OK(c.DestroyStream(stream));
}

TEST_P(Streams, EventTimestampsMapOntoTheHostClock) {
  constexpr size_t kBytes = 8 << 20;
  Apply(backend().queued_copies);
  auto dev = Tensor::Empty({kBytes}, kU8, memory());
  Apply(backend().queued_copies_undo);
  ASSERT_TRUE(dev.ok()) << dev.status().message();
  CheckTimestampsOnTheHostClock(client(), dev->data(), kBytes);
}

TEST_P(Streams, CurrentStreamIsPerThreadAndPerInstance) {
  const conformance::DeviceClient c = client();
  HETRT_ASSERT_OK_AND_ASSIGN(hetrt_stream_t * first, c.NewStream());
  HETRT_ASSERT_OK_AND_ASSIGN(hetrt_stream_t * second, c.NewStream());
  EXPECT_EQ(ValueOrFail(c.CurrentStream()), nullptr) << "initially the default stream";
  hetrt_stream_t* previous = first;
  HETRT_ASSERT_OK(c.SetCurrentStream(first, &previous));
  EXPECT_EQ(previous, nullptr);
  EXPECT_EQ(ValueOrFail(c.CurrentStream()), first);
  std::thread([&] {
    EXPECT_EQ(ValueOrFail(c.CurrentStream()), nullptr) << "another thread's current stream leaked in";
    hetrt_stream_t* replaced = first;
    EXPECT_TRUE(c.SetCurrentStream(second, &replaced).ok());
    EXPECT_EQ(replaced, nullptr);
    EXPECT_EQ(ValueOrFail(c.CurrentStream()), second);
    EXPECT_TRUE(c.SetCurrentStream(nullptr, &replaced).ok());
    EXPECT_EQ(replaced, second);
  }).join();
  EXPECT_EQ(ValueOrFail(c.CurrentStream()), first);
  {
    auto own = AnotherRegistry();
    HETRT_ASSERT_OK_AND_ASSIGN(Plugin * other, own->ForDevice(device()));
    EXPECT_EQ(ValueOrFail(conformance::DeviceClient(other, device()).CurrentStream()), nullptr)
        << "another instance's current stream leaked in";
  }
  HETRT_ASSERT_OK(c.SetCurrentStream(second, &previous));
  EXPECT_EQ(previous, first) << "set returns the previous stream";
  HETRT_ASSERT_OK(c.SetCurrentStream(nullptr, &previous));
  EXPECT_EQ(previous, second);
  for (hetrt_stream_t* stream : {first, second}) HETRT_ASSERT_OK(c.DestroyStream(stream));
}

}  // namespace
}  // namespace hetrt::device_suite
