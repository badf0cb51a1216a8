// Instances, devices and their attributes, options and copy routes on every backend.
#include "device_suite.h"
#include "hetrt/base/dtype.h"

namespace hetrt::device_suite {
namespace {

using Instances = DeviceSuite;
INSTANTIATE_TEST_SUITE_P(Backends, Instances, ::testing::ValuesIn(AllBackends()), BackendName);

// Two registries hold two instances of the plugin, each with its own devices
// and queues; one gone, the other still works, and memory of the one gone
// keeps its instance alive until the memory is released.
TEST_P(Instances, TwoRegistriesHoldIndependentInstances) {
  const std::vector<uint8_t> in = Pattern(64);
  Tensor kept;
  Plugin* mine = nullptr;
  {
    auto own = AnotherRegistry();
    HETRT_ASSERT_OK_AND_ASSIGN(mine, own->ForDevice(device()));
    EXPECT_NE(mine->instance(), plugin()->instance());
    HETRT_ASSERT_OK_AND_ASSIGN(Tensor a, Tensor::Empty({64}, kU8, mine->DeviceAllocator(device())));
    std::vector<uint8_t> out(64, 0);
    HETRT_ASSERT_OK(own->CopyBytes(in.data(), 0, kHost, a.data(), 0, device(), 64));
    HETRT_ASSERT_OK(own->CopyBytes(a.data(), 0, device(), out.data(), 0, kHost, 64));
    EXPECT_EQ(out, in);
    if (backend().driver_messages) {
      EXPECT_EQ(backend().driver_messages(*mine, device()), 0);
    }
    kept = a;
  }  // the registry is gone; `kept` holds its instance
  std::vector<uint8_t> back(64, 0);
  HETRT_ASSERT_OK(conformance::DeviceClient(mine, device()).Copy(kept.data(), 0, device(), back.data(), 0, kHost, 64));
  EXPECT_EQ(back, in);
  kept = Tensor();
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor b, Tensor::Empty({64}, kU8, memory()));
  std::vector<uint8_t> out(64, 0);
  HETRT_ASSERT_OK(registry().CopyBytes(in.data(), 0, kHost, b.data(), 0, device(), 64));
  HETRT_ASSERT_OK(registry().CopyBytes(b.data(), 0, device(), out.data(), 0, kHost, 64));
  EXPECT_EQ(out, in);
}

TEST_P(Instances, DevicesAreCountedNamedAndDescribedByAttributes) {
  HETRT_ASSERT_OK_AND_ASSIGN(auto count, plugin()->CountDevices(backend().device_type));
  EXPECT_GE(count.count, 1);
  EXPECT_EQ(plugin()->CountDevices(kDLROCM).status().code(), StatusCode::kInvalidArgument)
      << "a device type the plugin does not declare";
  HETRT_ASSERT_OK_AND_ASSIGN(std::string name, plugin()->AttributeString(device(), HETRT_DEVICE_ATTR_NAME));
  EXPECT_FALSE(name.empty());
  HETRT_ASSERT_OK_AND_ASSIGN(int64_t unified, plugin()->AttributeInt(device(), HETRT_DEVICE_ATTR_HOST_UNIFIED_MEMORY));
  EXPECT_EQ(unified != 0, plugin()->SharesHostMemory(device()));
  HETRT_ASSERT_OK_AND_ASSIGN(int64_t total, plugin()->AttributeInt(device(), HETRT_DEVICE_ATTR_TOTAL_MEMORY));
  EXPECT_GT(total, 0);
  for (int32_t unknown : {999, 0x7777}) {
    EXPECT_EQ(plugin()->AttributeInt(device(), unknown).status().code(), StatusCode::kNotFound) << unknown;
  }
  const DLDevice beyond{backend().device_type, count.count};
  EXPECT_FALSE(plugin()->AttributeString(beyond, HETRT_DEVICE_ATTR_NAME).ok()) << DeviceToString(beyond);
}

TEST_P(Instances, SetDeviceAcceptsItsDevicesOnly) {
  const conformance::DeviceClient c = client();
  auto args = c.Make<hetrt_set_device_args_t>();
  HETRT_ASSERT_OK(c.Call(c.api()->set_device, &args, "set_device"));
  HETRT_ASSERT_OK_AND_ASSIGN(auto count, plugin()->CountDevices(backend().device_type));
  args.device.device_id = count.count;
  EXPECT_FALSE(c.Call(c.api()->set_device, &args, "set_device").ok());
}

TEST_P(Instances, CopyRoutesAndUnknownOptionsAreAnswered) {
  EXPECT_TRUE(plugin()->CanCopy(kHost, device()));
  EXPECT_TRUE(plugin()->CanCopy(device(), kHost));
  EXPECT_TRUE(plugin()->CanCopy(device(), device()));
  const DLDevice foreign{kDLROCM, 0};
  EXPECT_FALSE(plugin()->CanCopy(foreign, device()));
  EXPECT_FALSE(plugin()->CanCopy(device(), foreign));
  EXPECT_EQ(plugin()->SetOption("no_such_option", "1").code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace hetrt::device_suite
