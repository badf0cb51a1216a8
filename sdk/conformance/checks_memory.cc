// Memory in depth: every kind and alignment, refused frees and their count,
// statistics per instance, copies through the core in every direction and
// through the ABI at exact ranges, and the workspace.
#include <cstdio>
#include <cstring>
#include <thread>

#include "device_checks.h"
#include "hetrt/base/dtype.h"

namespace hetrt::conformance {
namespace {

// Whether copies may name pinned memory by the device it belongs to (the ABI's
// rule); a profile may say the backend's pinned memory is plain host memory.
bool PinnedLabelledWithDevice() { return !Ctx().profile.Unsupported("pinned-labelled-with-device"); }

bool IsAligned(const void* pointer, uint64_t alignment) {
  return reinterpret_cast<uintptr_t>(pointer) % alignment == 0;
}

// Memory the host can address (pinned, host-visible, a host device's) is
// aligned as asked and writable through its host pointer; device memory holds
// what is copied in. Alignments above the backend's guarantee may be refused
// (the device's HETRT_DEVICE_ATTR_MAX_ALIGNMENT, else the ABI's 256).
TEST(Memory, EveryKindHonoursAlignmentsUpTo4096AndHoldsItsBytes) {
  HETRT_REQUIRE_DEVICE();
  const DeviceClient c = Client();
  const bool shared = Ctx().plugin->SharesHostMemory(Ctx().device);
  for (int32_t kind : {HETRT_MEMORY_DEVICE, HETRT_MEMORY_HOST_PINNED, HETRT_MEMORY_HOST_VISIBLE}) {
    for (uint64_t alignment : {64, 256, 4096}) {
      for (uint64_t nbytes : {1, 100, 4097, 1 << 20}) {
        SCOPED_TRACE("kind " + std::to_string(kind) + ", alignment " + std::to_string(alignment) + ", " +
                     std::to_string(nbytes) + " bytes");
        auto allocation = c.Allocate(nbytes, alignment, kind);
        if (!allocation.ok() && alignment > GuaranteedAlignment()) continue;
        if (kind == HETRT_MEMORY_HOST_VISIBLE && !shared) {
          ASSERT_FALSE(allocation.ok()) << "host-visible memory on a device that does not share host memory";
          EXPECT_EQ(allocation.status().code(), StatusCode::kUnimplemented) << allocation.status().message();
          continue;
        }
        ASSERT_TRUE(allocation.ok()) << allocation.status().message();
        void* host = allocation->host_pointer;
        if (kind == HETRT_MEMORY_HOST_PINNED) {
          EXPECT_EQ(host, allocation->data) << "pinned memory is a host address";
        }
        if (kind != HETRT_MEMORY_DEVICE) {
          ASSERT_NE(host, nullptr);
        }
        const std::vector<uint8_t> bytes = Pattern(nbytes);
        std::vector<uint8_t> back(nbytes);
        if (host != nullptr) {
          EXPECT_TRUE(IsAligned(host, alignment)) << host;
          std::memcpy(host, bytes.data(), nbytes);
          std::memcpy(back.data(), host, nbytes);
        } else {
          HETRT_CHECK_OK(c.Copy(bytes.data(), 0, kHost, allocation->data, 0, Ctx().device, nbytes));
          HETRT_CHECK_OK(c.Copy(allocation->data, 0, Ctx().device, back.data(), 0, kHost, nbytes));
        }
        EXPECT_EQ(back, bytes);
        HETRT_CHECK_OK(c.Free(allocation->data, kind));
      }
    }
  }
}

// A free the plugin refuses (of bytes it never allocated: zeros, no tag nor
// descriptor of its own) comes back as an error, is counted in failed_frees,
// and, through the core's allocator (a tensor's free, with nobody to return
// the error to), is logged.
TEST(Memory, RefusedFreesAreCountedAndLogged) {
  HETRT_REQUIRE_DEVICE();
  HETRT_REQUIRE_CALL(memory_stats);
  HETRT_CHECK_OK_AND_ASSIGN(DeviceMemoryStats before, Ctx().plugin->MemoryStats(Ctx().device));
  std::vector<uint64_t> never_allocated(512, 0);
  void* stranger = &never_allocated[256];
  EXPECT_FALSE(Client().Free(stranger).ok());
  ::testing::internal::CaptureStderr();
  Memory().Free(stranger);
  const std::string log = ::testing::internal::GetCapturedStderr();
  char expected[96];
  std::snprintf(expected, sizeof expected, "hetrt[core] error: free of %p on %s failed: plugin '", stranger,
                DeviceToString(Ctx().device).c_str());
  EXPECT_NE(log.find(expected), std::string::npos) << log;
  HETRT_CHECK_OK_AND_ASSIGN(DeviceMemoryStats after, Ctx().plugin->MemoryStats(Ctx().device));
  EXPECT_EQ(after.num_allocations, before.num_allocations);
  if (Ctx().profile.Unsupported("failed-free-count")) {
    EXPECT_FALSE(after.failed_frees.has_value()) << "reported without counting: " << *after.failed_frees;
    return;
  }
  ASSERT_TRUE(before.failed_frees.has_value());
  ASSERT_TRUE(after.failed_frees.has_value());
  EXPECT_EQ(*after.failed_frees, *before.failed_frees + 2);
}

// (How exhaustion is reported differs: RESOURCE_EXHAUSTED on the CPU,
// cpu_plugin_test.cc; OpenCL says INTERNAL.)
TEST(Memory, UnknownKindsOtherDevicesAndImpossibleSizesAreRefused) {
  HETRT_REQUIRE_DEVICE();
  HETRT_REQUIRE_CALL(memory_stats);
  const DeviceClient c = Client();
  HETRT_CHECK_OK_AND_ASSIGN(DeviceMemoryStats before, Ctx().plugin->MemoryStats(Ctx().device));
  EXPECT_EQ(c.Allocate(64, 64, 7).status().code(), StatusCode::kInvalidArgument) << "memory kind 7";
  HETRT_CHECK_OK_AND_ASSIGN(auto count, Ctx().plugin->CountDevices(Ctx().device.device_type));
  const DeviceClient beyond(Ctx().plugin, DLDevice{Ctx().device.device_type, count.count});
  EXPECT_FALSE(beyond.Allocate(64).ok()) << "allocated on " << DeviceToString(beyond.device());
  EXPECT_FALSE(c.Allocate(UINT64_MAX - 10).ok()) << "an impossible allocation succeeded";
  HETRT_CHECK_OK_AND_ASSIGN(DeviceMemoryStats after, Ctx().plugin->MemoryStats(Ctx().device));
  EXPECT_EQ(after.num_allocations, before.num_allocations) << "a refused allocation was counted";
}

// free(NULL) does nothing, as free(3); a free naming a device the plugin
// does not have is refused, even of a block it allocated on another.
TEST(Memory, FreeOfNullDoesNothingAndAFreeOnAnotherDeviceIsRefused) {
  HETRT_REQUIRE_DEVICE();
  const DeviceClient c = Client();
  HETRT_CHECK_OK(c.Free(nullptr));
  HETRT_CHECK_OK_AND_ASSIGN(auto count, Ctx().plugin->CountDevices(Ctx().device.device_type));
  const DeviceClient beyond(Ctx().plugin, DLDevice{Ctx().device.device_type, count.count});
  HETRT_CHECK_OK_AND_ASSIGN(auto buffer, c.Allocate(64));
  EXPECT_FALSE(beyond.Free(buffer.data).ok()) << "freed on " << DeviceToString(beyond.device());
  HETRT_CHECK_OK(c.Free(buffer.data));  // still there, and freed where it lives
}

// On an instance of its own, so that nothing else allocates meanwhile.
TEST(Memory, StatisticsRiseAndFallPerInstanceAndKeepThePeak) {
  HETRT_REQUIRE_DEVICE();
  HETRT_REQUIRE_CALL(memory_stats);
  auto own = AnotherRegistry();
  HETRT_CHECK_OK_AND_ASSIGN(Plugin * mine, own->ForDevice(Ctx().device));
  const DeviceClient c(mine, Ctx().device);
  HETRT_CHECK_OK_AND_ASSIGN(DeviceMemoryStats start, mine->MemoryStats(Ctx().device));
  HETRT_CHECK_OK_AND_ASSIGN(DeviceMemoryStats shared_start, Ctx().plugin->MemoryStats(Ctx().device));
  auto expect_stats = [&](uint64_t in_use, uint64_t peak, uint64_t count) {
    HETRT_CHECK_OK_AND_ASSIGN(DeviceMemoryStats stats, mine->MemoryStats(Ctx().device));
    EXPECT_EQ(stats.bytes_in_use, start.bytes_in_use + in_use);
    EXPECT_EQ(stats.peak_bytes_in_use, std::max(start.peak_bytes_in_use, start.bytes_in_use + peak));
    EXPECT_EQ(stats.num_allocations, start.num_allocations + count);
    if (!Ctx().plugin->SharesHostMemory(Ctx().device)) {
      EXPECT_GT(stats.bytes_limit, 0u);
    }
  };
  HETRT_CHECK_OK_AND_ASSIGN(auto a, c.Allocate(100));
  expect_stats(100, 100, 1);
  HETRT_CHECK_OK_AND_ASSIGN(auto b, c.Allocate(1 << 20));
  expect_stats(100 + (1 << 20), 100 + (1 << 20), 2);
  HETRT_CHECK_OK(c.Free(a.data));
  expect_stats(1 << 20, 100 + (1 << 20), 1);
  HETRT_CHECK_OK_AND_ASSIGN(auto empty, c.Allocate(0));
  expect_stats(1 << 20, 100 + (1 << 20), 2);
  HETRT_CHECK_OK(c.Free(b.data));
  HETRT_CHECK_OK(c.Free(empty.data));
  expect_stats(0, 100 + (1 << 20), 0);
  HETRT_CHECK_OK_AND_ASSIGN(DeviceMemoryStats shared_end, Ctx().plugin->MemoryStats(Ctx().device));
  EXPECT_EQ(shared_end.bytes_in_use, shared_start.bytes_in_use) << "statistics are per instance";
}

TEST(Memory, CopiesOfOddSizesAndOffsetsRoundTripInEveryDirection) {
  HETRT_REQUIRE_DEVICE();
  {
    SCOPED_TRACE("device memory");
    CheckCopiesRoundTrip(*Ctx().registry, Ctx().plugin, Ctx().device, Memory(), PinnedLabelledWithDevice());
  }
  if (!Ctx().profile.queued_copies.empty()) {
    SCOPED_TRACE("device memory copied through the device's queue");
    Apply(Ctx().profile.queued_copies);
    CheckCopiesRoundTrip(*Ctx().registry, Ctx().plugin, Ctx().device, Memory(), PinnedLabelledWithDevice());
    Apply(Ctx().profile.queued_copies_undo);
  }
  if (Ctx().plugin->SharesHostMemory(Ctx().device)) {
    SCOPED_TRACE("host-visible memory");
    CheckCopiesRoundTrip(*Ctx().registry, Ctx().plugin, Ctx().device, Memory(HETRT_MEMORY_HOST_VISIBLE),
                         PinnedLabelledWithDevice());
  }
}

// Through the ABI: asynchronous and blocking copies at offsets touch exactly
// their range, and a copy naming a device of another type is refused.
TEST(Memory, AbiCopiesTouchExactlyTheirRangeAndRefuseForeignDevices) {
  HETRT_REQUIRE_DEVICE();
  const DeviceClient c = Client();
  constexpr uint64_t kSrcOffset = 5, kDstOffset = 7;
  constexpr uint8_t kGuard = 0xEE;
  for (uint64_t nbytes : {1, 3, 4097}) {
    SCOPED_TRACE(std::to_string(nbytes) + " bytes");
    const std::vector<uint8_t> source = Pattern(nbytes + kSrcOffset);
    const std::vector<uint8_t> guards(nbytes + kDstOffset + 1, kGuard);
    HETRT_CHECK_OK_AND_ASSIGN(auto buffer, c.Allocate(guards.size()));
    HETRT_CHECK_OK(c.Copy(guards.data(), 0, kHost, buffer.data, 0, Ctx().device, guards.size()));
    HETRT_CHECK_OK(c.Copy(source.data(), kSrcOffset, kHost, buffer.data, kDstOffset, Ctx().device, nbytes, nullptr, 0));
    HETRT_CHECK_OK(c.Synchronize(nullptr));
    std::vector<uint8_t> back(guards.size() + 1, 0);
    HETRT_CHECK_OK(c.Copy(buffer.data, 0, Ctx().device, back.data(), 1, kHost, guards.size()));
    EXPECT_EQ(back[kDstOffset], kGuard) << "wrote before the destination range";
    EXPECT_EQ(back[kDstOffset + nbytes + 1], kGuard) << "wrote past the destination range";
    EXPECT_EQ(std::memcmp(back.data() + 1 + kDstOffset, source.data() + kSrcOffset, nbytes), 0);
    EXPECT_EQ(back[0], 0) << "wrote before the host range";
    HETRT_CHECK_OK(c.Free(buffer.data));
  }
  HETRT_CHECK_OK_AND_ASSIGN(auto buffer, c.Allocate(8));
  std::vector<uint8_t> host(8, 0);
  const DLDevice foreign{Ctx().device.device_type == kDLROCM ? kDLMetal : kDLROCM, 0};
  EXPECT_FALSE(c.Copy(host.data(), 0, foreign, buffer.data, 0, Ctx().device, 8).ok());
  EXPECT_FALSE(c.Copy(buffer.data, 0, Ctx().device, host.data(), 0, foreign, 8).ok());
  HETRT_CHECK_OK(c.Free(buffer.data));
}

// ---------------------------------------------------------------- workspace

struct Workspace {
  const DeviceClient& c;
  Status Alloc(uint64_t nbytes, void** data) const {
    auto args = c.Make<hetrt_workspace_args_t>();
    args.nbytes = nbytes;
    Status status = c.Call(c.api()->workspace_alloc, &args, "workspace_alloc");
    *data = args.data;
    return status;
  }
  Status Free(void* data) const {
    auto args = c.Make<hetrt_workspace_args_t>();
    args.data = data;
    return c.Call(c.api()->workspace_free, &args, "workspace_free");
  }
};

// The workspace checks need a device and both workspace calls.
#define HETRT_REQUIRE_WORKSPACE()        \
  do {                                   \
    HETRT_REQUIRE_DEVICE();              \
    HETRT_REQUIRE_CALL(workspace_alloc); \
    HETRT_REQUIRE_CALL(workspace_free);  \
  } while (0)

TEST(Memory, WorkspaceHoldsItsBytesAndIsReusedOnceFreed) {
  HETRT_REQUIRE_WORKSPACE();
  const DeviceClient c = Client();
  const Workspace ws{c};
  std::vector<void*> blocks;
  for (uint64_t nbytes : {1, 64, 4097, 200000}) {
    void* data = nullptr;
    HETRT_CHECK_OK(ws.Alloc(nbytes, &data));
    ASSERT_NE(data, nullptr);
    const std::vector<uint8_t> bytes = Pattern(nbytes);
    HETRT_CHECK_OK(c.Copy(bytes.data(), 0, kHost, data, 0, Ctx().device, nbytes));
    std::vector<uint8_t> back(nbytes);
    HETRT_CHECK_OK(c.Copy(data, 0, Ctx().device, back.data(), 0, kHost, nbytes));
    EXPECT_EQ(back, bytes) << nbytes << " bytes of workspace";
    blocks.push_back(data);
  }
  for (auto data = blocks.rbegin(); data != blocks.rend(); ++data) HETRT_CHECK_OK(ws.Free(*data));
  void *first = nullptr, *second = nullptr, *again = nullptr;
  HETRT_CHECK_OK(ws.Alloc(1000, &first));
  HETRT_CHECK_OK(ws.Alloc(2000, &second));
  HETRT_CHECK_OK(ws.Free(second));
  HETRT_CHECK_OK(ws.Free(first));
  HETRT_CHECK_OK(ws.Alloc(1000, &again));
  EXPECT_EQ(again, first) << "freed workspace was not reused on the same stream";
  HETRT_CHECK_OK(ws.Free(again));
}

// (Double frees: refused on the CPU, cpu_plugin_test.cc; OpenCL and Vulkan
// do not notice them.)
TEST(Memory, WorkspaceRefusesForeignPointersAndImpossibleSizes) {
  HETRT_REQUIRE_WORKSPACE();
  const DeviceClient c = Client();
  const Workspace ws{c};
  int not_workspace = 0;
  EXPECT_FALSE(ws.Free(&not_workspace).ok());
  void* impossible = nullptr;
  const Status exhausted = ws.Alloc(UINT64_MAX - 10, &impossible);
  EXPECT_EQ(exhausted.code(), StatusCode::kResourceExhausted) << exhausted.message();
  EXPECT_EQ(impossible, nullptr);
}

}  // namespace
}  // namespace hetrt::conformance
