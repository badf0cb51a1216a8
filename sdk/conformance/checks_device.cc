// Devices, memory and copies of the device under test.
#include <cstring>
#include <numeric>
#include <vector>

#include "conformance.h"
#include "hetrt/base/dtype.h"

namespace hetrt::conformance {
namespace {

constexpr DLDevice kHost{kDLCPU, 0};

std::vector<uint8_t> Pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> bytes(n);
  for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<uint8_t>(i * 131 + seed + (i >> 8));
  return bytes;
}

// The error a call returned, or a failure when it succeeded.
template <class Args>
void ExpectRefused(hetrt_error_t* (*fn)(Args*), Args* args, const char* what) {
  const Status status = Client().Call(fn, args, what);
  EXPECT_FALSE(status.ok()) << what << " succeeded";
  EXPECT_GT(status.message().size(), std::string("plugin '': ").size() + Ctx().plugin->name().size())
      << what << ": empty error message";
}

TEST(Devices, EnumerationNamesAndAttributes) {
  Plugin* p = Ctx().plugin;
  if (p->device_api() == nullptr) GTEST_SKIP() << "the plugin declares no device types";
  for (int32_t type : p->device_types()) {
    SCOPED_TRACE(DeviceTypeName(type));
    auto count = p->CountDevices(type);
    ASSERT_TRUE(count.ok()) << count.status().message();
    EXPECT_GE(count->count, 0);
    if (count->count == 0) {
      EXPECT_FALSE(count->unavailable_reason.empty()) << "no device, and no reason given";
    }
    for (int32_t id = 0; id < count->count; ++id) {
      const DLDevice device{static_cast<DLDeviceType>(type), id};
      auto name = p->AttributeString(device, HETRT_DEVICE_ATTR_NAME);
      ASSERT_TRUE(name.ok()) << name.status().message();
      EXPECT_FALSE(name->empty()) << DeviceToString(device) << " has an empty name";
      // An attribute no minor defines yet is NOT_FOUND, not a crash or a value.
      auto unknown = p->AttributeInt(device, 0x7ffff);
      ASSERT_FALSE(unknown.ok());
      EXPECT_EQ(unknown.status().code(), StatusCode::kNotFound) << unknown.status().message();
    }
  }
  // A device type the plugin did not declare is INVALID_ARGUMENT.
  int32_t undeclared = 1000;
  auto count = p->CountDevices(undeclared);
  ASSERT_FALSE(count.ok()) << "device_count answered for an undeclared device type";
  EXPECT_EQ(count.status().code(), StatusCode::kInvalidArgument) << count.status().message();
}

TEST(Devices, DeviceOutOfRangeIsAnError) {
  HETRT_REQUIRE_DEVICE();
  auto count = Ctx().plugin->CountDevices(Ctx().device.device_type);
  ASSERT_TRUE(count.ok());
  DeviceClient beyond(Ctx().plugin, DLDevice{Ctx().device.device_type, count->count});
  auto args = beyond.Make<hetrt_allocate_args_t>();
  args.nbytes = 16;
  const Status status = beyond.Call(beyond.api()->allocate, &args, "allocate");
  EXPECT_FALSE(status.ok()) << "allocate on " << DeviceToString(beyond.device()) << " succeeded";
}

TEST(Memory, ZeroBytesGivesADistinctFreeableHandle) {
  HETRT_REQUIRE_DEVICE();
  DeviceClient c = Client();
  HETRT_CHECK_OK_AND_ASSIGN(auto a, c.Allocate(0));
  HETRT_CHECK_OK_AND_ASSIGN(auto b, c.Allocate(0));
  EXPECT_NE(a.data, b.data);
  HETRT_EXPECT_OK(c.Free(a.data));
  HETRT_EXPECT_OK(c.Free(b.data));
}

// Alignments up to 256 bytes (what compiled kernels assume) must be honoured;
// a larger one may be refused with an error. Device pointers are opaque, so
// the address is checked where it is a host address: CPU devices and pinned
// host memory.
TEST(Memory, LargeAndAlignedAllocations) {
  HETRT_REQUIRE_DEVICE();
  DeviceClient c = Client();
  const bool host_addresses = c.device().device_type == kDLCPU;
  std::vector<void*> live;
  for (uint64_t alignment : {1, 16, 64, 256, 4096}) {
    auto a = c.Allocate(1000, alignment);
    if (!a.ok() && alignment > 256) {
      EXPECT_FALSE(a.status().message().empty());
      continue;
    }
    HETRT_CHECK_OK(a.status());
    if (host_addresses) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(a->data) % alignment, 0u) << "alignment " << alignment;
    }
    live.push_back(a->data);
    auto pinned = c.Allocate(1000, alignment, HETRT_MEMORY_HOST_PINNED);
    if (pinned.ok()) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(pinned->host_pointer) % alignment, 0u) << "pinned, alignment " << alignment;
      HETRT_EXPECT_OK(c.Free(pinned->data, HETRT_MEMORY_HOST_PINNED));
    }
  }
  const uint64_t large = 256ull << 20;
  HETRT_CHECK_OK_AND_ASSIGN(auto big, c.Allocate(large, 256));
  // The last byte is reachable: copy a pattern to the end and back.
  const std::vector<uint8_t> tail = Pattern(4096, 7);
  HETRT_CHECK_OK(c.Copy(tail.data(), 0, kHost, big.data, large - tail.size(), c.device(), tail.size()));
  std::vector<uint8_t> back(tail.size());
  HETRT_CHECK_OK(c.Copy(big.data, large - tail.size(), c.device(), back.data(), 0, kHost, back.size()));
  EXPECT_EQ(back, tail);
  live.push_back(big.data);
  if (c.api()->memory_stats) {
    auto stats = Ctx().plugin->MemoryStats(c.device());
    ASSERT_TRUE(stats.ok()) << stats.status().message();
    EXPECT_GE(stats->bytes_in_use, large);
    EXPECT_GE(stats->num_allocations, live.size());
  }
  for (void* data : live) HETRT_EXPECT_OK(c.Free(data));
}

TEST(Memory, ExhaustionIsAnErrorNotACrash) {
  HETRT_REQUIRE_DEVICE();
  DeviceClient c = Client();
  auto args = c.Make<hetrt_allocate_args_t>();
  args.nbytes = uint64_t{1} << 62;  // 4 EiB: no device has it
  ExpectRefused(c.api()->allocate, &args, "allocate(4 EiB)");
  // The device still works afterwards.
  HETRT_CHECK_OK_AND_ASSIGN(auto a, c.Allocate(64));
  HETRT_EXPECT_OK(c.Free(a.data));
}

TEST(Memory, PinnedHostMemoryIsAHostAddress) {
  HETRT_REQUIRE_DEVICE();
  DeviceClient c = Client();
  auto pinned = c.Allocate(4096, 64, HETRT_MEMORY_HOST_PINNED);
  if (!pinned.ok() && pinned.status().code() == StatusCode::kUnimplemented)
    GTEST_SKIP() << "the plugin has no pinned host memory: " << pinned.status().message();
  ASSERT_TRUE(pinned.ok()) << pinned.status().message();
  EXPECT_EQ(pinned->data, pinned->host_pointer);
  ASSERT_NE(pinned->host_pointer, nullptr);
  std::memset(pinned->host_pointer, 0x5a, 4096);  // writable by the host
  HETRT_EXPECT_OK(c.Free(pinned->data, HETRT_MEMORY_HOST_PINNED));
}

// Host -> device, device -> device, device -> host, with offsets on both sides
// and odd sizes; every byte checked, including the ones that must not change.
TEST(Copies, EveryDirectionWithOffsetsAndOddSizes) {
  HETRT_REQUIRE_DEVICE();
  DeviceClient c = Client();
  const DLDevice d = c.device();
  constexpr size_t kSize = 4099;
  HETRT_CHECK_OK_AND_ASSIGN(auto a, c.Allocate(kSize));
  HETRT_CHECK_OK_AND_ASSIGN(auto b, c.Allocate(kSize));
  const bool device_to_device = Ctx().plugin->CanCopy(d, d);
  const std::vector<uint8_t> source = Pattern(kSize, 3);
  const std::vector<uint8_t> zeros(kSize, 0);
  struct Case {
    uint64_t src_offset, dst_offset, n;
  };
  for (const Case& k : {Case{0, 0, 1}, Case{3, 5, 3}, Case{1, 0, 4097}, Case{7, 11, 1001}, Case{0, 0, kSize}}) {
    SCOPED_TRACE(std::to_string(k.src_offset) + " -> " + std::to_string(k.dst_offset) + ", " + std::to_string(k.n) +
                 " bytes");
    HETRT_CHECK_OK(c.Copy(zeros.data(), 0, kHost, a.data, 0, d, kSize));
    HETRT_CHECK_OK(c.Copy(source.data(), k.src_offset, kHost, a.data, k.dst_offset, d, k.n));
    std::vector<uint8_t> expected = zeros;
    std::memcpy(expected.data() + k.dst_offset, source.data() + k.src_offset, k.n);
    std::vector<uint8_t> back(kSize, 0xee);
    HETRT_CHECK_OK(c.Copy(a.data, 0, d, back.data(), 0, kHost, kSize));
    EXPECT_EQ(back, expected) << "host -> device";
    // Device -> host from an offset into an offset.
    std::vector<uint8_t> part(kSize, 0xee), part_expected(kSize, 0xee);
    HETRT_CHECK_OK(c.Copy(a.data, k.src_offset, d, part.data(), k.dst_offset, kHost, k.n));
    std::memcpy(part_expected.data() + k.dst_offset, expected.data() + k.src_offset, k.n);
    EXPECT_EQ(part, part_expected) << "device -> host";
    if (device_to_device) {
      HETRT_CHECK_OK(c.Copy(zeros.data(), 0, kHost, b.data, 0, d, kSize));
      HETRT_CHECK_OK(c.Copy(a.data, k.src_offset, d, b.data, k.dst_offset, d, k.n));
      std::vector<uint8_t> dd_expected = zeros;
      std::memcpy(dd_expected.data() + k.dst_offset, expected.data() + k.src_offset, k.n);
      HETRT_CHECK_OK(c.Copy(b.data, 0, d, back.data(), 0, kHost, kSize));
      EXPECT_EQ(back, dd_expected) << "device -> device";
    }
  }
  HETRT_EXPECT_OK(c.Free(a.data));
  HETRT_EXPECT_OK(c.Free(b.data));
  if (!device_to_device) GTEST_SKIP() << "host <-> device checked; can_copy says no device -> device copies";
}

TEST(Copies, AsynchronousCopiesOnAStreamThenSynchronize) {
  HETRT_REQUIRE_DEVICE();
  HETRT_REQUIRE_CALL(stream_create);
  DeviceClient c = Client();
  constexpr size_t kSize = (1 << 20) + 13;
  HETRT_CHECK_OK_AND_ASSIGN(auto dev, c.Allocate(kSize));
  HETRT_CHECK_OK_AND_ASSIGN(hetrt_stream_t * stream, c.NewStream());
  const std::vector<uint8_t> source = Pattern(kSize, 9);
  std::vector<uint8_t> back(kSize, 0);
  HETRT_CHECK_OK(c.Copy(source.data(), 0, kHost, dev.data, 0, c.device(), kSize, stream, 0));
  HETRT_CHECK_OK(c.Copy(dev.data, 0, c.device(), back.data(), 0, kHost, kSize, stream, 0));
  HETRT_CHECK_OK(c.Synchronize(stream));
  EXPECT_EQ(back, source);
  HETRT_EXPECT_OK(c.DestroyStream(stream));
  HETRT_EXPECT_OK(c.Free(dev.data));
}

}  // namespace
}  // namespace hetrt::conformance
