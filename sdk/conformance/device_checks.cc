#include "device_checks.h"

#include <time.h>

#include <cstring>

namespace hetrt::conformance {

std::vector<uint8_t> Pattern(size_t n) {
  std::vector<uint8_t> bytes(n);
  for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<uint8_t>(i * 7 + 3);
  return bytes;
}

int64_t HostNowNs() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

void CheckCopiesRoundTrip(PluginRegistry& reg, Plugin* plugin, DLDevice device, Allocator& memory,
                          bool pinned_labelled_as_device) {
  constexpr int64_t kSize = 4099;
  HETRT_CHECK_OK_AND_ASSIGN(Tensor a, Tensor::Empty({kSize}, kU8, memory));
  HETRT_CHECK_OK_AND_ASSIGN(Tensor b, Tensor::Empty({kSize}, kU8, memory));
  Allocator& pinned_memory = plugin->DeviceAllocator(device, HETRT_MEMORY_HOST_PINNED);
  HETRT_CHECK_OK_AND_ASSIGN(Tensor pinned, Tensor::Empty({kSize}, kU8, pinned_memory));
  const std::vector<uint8_t> host = Pattern(kSize);
  std::vector<uint8_t> back(kSize);
  struct Case {
    uint64_t src_off, dst_off, n;
  };
  for (const Case& c :
       {Case{0, 0, 1}, Case{3, 5, 3}, Case{1, 0, 4097}, Case{7, 11, 1000}, Case{0, 0, 4099}, Case{9, 2, 0}}) {
    SCOPED_TRACE(std::to_string(c.src_off) + "->" + std::to_string(c.dst_off) + " x" + std::to_string(c.n));
    std::fill(back.begin(), back.end(), 0);
    std::memset(pinned.data(), 0, kSize);
    HETRT_CHECK_OK(reg.CopyBytes(host.data(), c.src_off, kHost, a.data(), c.dst_off, device, c.n));  // host -> device
    HETRT_CHECK_OK(reg.CopyBytes(a.data(), c.dst_off, device, b.data(), c.src_off, device, c.n));  // device -> device
    // device -> pinned host memory (labelled with the device it belongs to where the plugin knows it)
    const DLDevice pinned_device = pinned_labelled_as_device ? device : kHost;
    HETRT_CHECK_OK(reg.CopyBytes(b.data(), c.src_off, device, pinned.data(), c.dst_off, pinned_device, c.n));
    HETRT_CHECK_OK(reg.CopyBytes(pinned.data(), c.dst_off, kHost, back.data(), c.dst_off, kHost, c.n));
    EXPECT_EQ(std::memcmp(back.data() + c.dst_off, host.data() + c.src_off, c.n), 0);
    if (c.dst_off > 0) {
      EXPECT_EQ(back[c.dst_off - 1], 0) << "wrote before the destination range";
    }
    if (c.dst_off + c.n < kSize) {
      EXPECT_EQ(back[c.dst_off + c.n], 0) << "wrote past the destination range";
    }
  }
  if (device.device_type == kDLCPU) return;  // host memory: the core knows no buffer sizes
  Status s = reg.CopyBytes(host.data(), 0, kHost, a.data(), 4000, device, 200);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("4099"), std::string::npos) << "the error names the buffer's size: " << s.message();
}

void CheckTimestampsOnTheHostClock(const conformance::DeviceClient& c, void* device_buffer, size_t nbytes) {
  HETRT_CHECK_OK_AND_ASSIGN(Device::ClockReading clock, c.Clock());
  EXPECT_LT(clock.uncertainty_ns, 10'000'000u);
  const int64_t offset = static_cast<int64_t>(clock.host_ns) - static_cast<int64_t>(clock.device_ns);
  HETRT_CHECK_OK_AND_ASSIGN(hetrt_stream_t * stream, c.NewStream());
  HETRT_CHECK_OK_AND_ASSIGN(hetrt_event_t * a, c.NewEvent(HETRT_EVENT_TIMING));
  HETRT_CHECK_OK_AND_ASSIGN(hetrt_event_t * b, c.NewEvent(HETRT_EVENT_TIMING));
  const std::vector<uint8_t> host(nbytes, 3);
  const int64_t before = HostNowNs();
  HETRT_CHECK_OK(c.Record(a, stream));
  HETRT_CHECK_OK(c.Copy(host.data(), 0, kHost, device_buffer, 0, c.device(), nbytes, stream, 0));
  HETRT_CHECK_OK(c.Record(b, stream));
  HETRT_CHECK_OK(c.EventCall(c.api()->event_synchronize, b));
  const int64_t after = HostNowNs();
  HETRT_CHECK_OK_AND_ASSIGN(uint64_t stamp_a, c.Timestamp(a));
  HETRT_CHECK_OK_AND_ASSIGN(uint64_t stamp_b, c.Timestamp(b));
  EXPECT_LE(stamp_a, stamp_b);
  const auto slack = static_cast<int64_t>(clock.uncertainty_ns);
  EXPECT_GE(static_cast<int64_t>(stamp_a) + offset + slack, before);
  EXPECT_LE(static_cast<int64_t>(stamp_b) + offset - slack, after);
  HETRT_CHECK_OK_AND_ASSIGN(double elapsed_ms, c.ElapsedMs(a, b));
  EXPECT_GE(elapsed_ms, 0.0);
  for (hetrt_event_t* e : {a, b}) HETRT_CHECK_OK(c.EventCall(c.api()->event_destroy, e));
  HETRT_CHECK_OK(c.DestroyStream(stream));
}

}  // namespace hetrt::conformance
