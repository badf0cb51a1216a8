// Streams and events: ordering across streams with waits, synchronize, event
// queries, elapsed time, the current stream per thread.
#include <initializer_list>
#include <vector>

#include "conformance.h"

namespace hetrt::conformance {
namespace {

constexpr DLDevice kHost{kDLCPU, 0};

#define HETRT_REQUIRE_STREAMS()          \
  do {                                   \
    HETRT_REQUIRE_DEVICE();              \
    HETRT_REQUIRE_CALL(stream_create);   \
    HETRT_REQUIRE_CALL(event_create);    \
    HETRT_REQUIRE_CALL(event_record);    \
    HETRT_REQUIRE_CALL(stream_wait_event); \
  } while (0)

// Destroys what a test made (its events, then its streams, then its buffer),
// each call succeeding.
void ExpectDestroyed(const DeviceClient& c, std::initializer_list<hetrt_event_t*> events,
                     std::initializer_list<hetrt_stream_t*> streams, void* buffer) {
  for (hetrt_event_t* event : events) HETRT_EXPECT_OK(c.EventCall(c.api()->event_destroy, event));
  for (hetrt_stream_t* stream : streams) HETRT_EXPECT_OK(c.DestroyStream(stream));
  HETRT_EXPECT_OK(c.Free(buffer));
}

// Stream A fills a buffer (a large copy, then a small one that overwrites its
// start); stream B waits for A's event and copies the buffer out. Without the
// wait B may read before A wrote: the bytes tell.
TEST(Streams, OrderingAcrossTwoStreamsWithWaitEvent) {
  HETRT_REQUIRE_STREAMS();
  DeviceClient c = Client();
  constexpr size_t kSize = 16 << 20;
  HETRT_CHECK_OK_AND_ASSIGN(auto dev, c.Allocate(kSize));
  HETRT_CHECK_OK_AND_ASSIGN(hetrt_stream_t * a, c.NewStream());
  HETRT_CHECK_OK_AND_ASSIGN(hetrt_stream_t * b, c.NewStream(HETRT_STREAM_COPY));
  HETRT_CHECK_OK_AND_ASSIGN(hetrt_event_t * written, c.NewEvent());
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    std::vector<uint8_t> big(kSize, static_cast<uint8_t>(round + 1)), small(4096, static_cast<uint8_t>(0xa0 + round));
    std::vector<uint8_t> back(kSize, 0);
    HETRT_CHECK_OK(c.Copy(big.data(), 0, kHost, dev.data, 0, c.device(), kSize, a, 0));
    HETRT_CHECK_OK(c.Copy(small.data(), 0, kHost, dev.data, 0, c.device(), small.size(), a, 0));
    HETRT_CHECK_OK(c.Record(written, a));
    HETRT_CHECK_OK(c.WaitEvent(b, written));
    HETRT_CHECK_OK(c.Copy(dev.data, 0, c.device(), back.data(), 0, kHost, kSize, b, 0));
    HETRT_CHECK_OK(c.Synchronize(b));
    EXPECT_EQ(back[0], small[0]);
    EXPECT_EQ(back[4095], small[0]);
    EXPECT_EQ(back[4096], big[0]);
    EXPECT_EQ(back[kSize - 1], big[0]);
    HETRT_CHECK_OK(c.Synchronize(a));  // `big` and `small` stay alive until A passed them
  }
  ExpectDestroyed(c, {written}, {a, b}, dev.data);
}

TEST(Streams, EventsCompleteSynchronizeAndTime) {
  HETRT_REQUIRE_STREAMS();
  HETRT_REQUIRE_CALL(event_synchronize);
  HETRT_REQUIRE_CALL(event_query);
  DeviceClient c = Client();
  HETRT_CHECK_OK_AND_ASSIGN(hetrt_stream_t * s, c.NewStream());
  HETRT_CHECK_OK_AND_ASSIGN(hetrt_event_t * start, c.NewEvent(HETRT_EVENT_TIMING));
  HETRT_CHECK_OK_AND_ASSIGN(hetrt_event_t * end, c.NewEvent(HETRT_EVENT_TIMING));
  int32_t complete = 0;
  HETRT_CHECK_OK(c.EventCall(c.api()->event_query, start, &complete));
  EXPECT_EQ(complete, 1) << "an event never recorded is complete";
  HETRT_CHECK_OK(c.EventCall(c.api()->event_synchronize, start));  // and does not block
  constexpr size_t kSize = 4 << 20;
  HETRT_CHECK_OK_AND_ASSIGN(auto dev, c.Allocate(kSize));
  std::vector<uint8_t> host(kSize, 1);
  HETRT_CHECK_OK(c.Record(start, s));
  HETRT_CHECK_OK(c.Copy(host.data(), 0, kHost, dev.data, 0, c.device(), kSize, s, 0));
  HETRT_CHECK_OK(c.Record(end, s));
  HETRT_CHECK_OK(c.EventCall(c.api()->event_synchronize, end));
  HETRT_CHECK_OK(c.EventCall(c.api()->event_query, end, &complete));
  EXPECT_EQ(complete, 1) << "event_query after event_synchronize";
  if (c.api()->event_elapsed_ms) {
    HETRT_CHECK_OK_AND_ASSIGN(double ms, c.ElapsedMs(start, end));
    EXPECT_GE(ms, 0.0);
  }
  if (c.api()->event_timestamp) {
    HETRT_CHECK_OK_AND_ASSIGN(uint64_t t0, c.Timestamp(start));
    HETRT_CHECK_OK_AND_ASSIGN(uint64_t t1, c.Timestamp(end));
    EXPECT_LE(t0, t1) << "timestamps of one stream go forward";
  }
  HETRT_CHECK_OK(c.Synchronize(s));
  HETRT_CHECK_OK(c.Synchronize(nullptr));  // the default stream
  ExpectDestroyed(c, {start, end}, {s}, dev.data);
}

}  // namespace
}  // namespace hetrt::conformance
