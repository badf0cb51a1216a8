// Instances, devices and their attributes, options and copy routes.
#include "device_checks.h"
#include "hetrt/base/dtype.h"

namespace hetrt::conformance {
namespace {

// Two registries hold two instances of the plugin, each with its own devices
// and queues; one gone, the other still works, and memory of the one gone
// keeps its instance alive until the memory is released.
TEST(Instances, TwoRegistriesHoldIndependentInstances) {
  HETRT_REQUIRE_DEVICE();
  const std::vector<uint8_t> in = Pattern(64);
  Tensor kept;
  Plugin* mine = nullptr;
  {
    auto own = AnotherRegistry();
    HETRT_CHECK_OK_AND_ASSIGN(mine, own->ForDevice(Ctx().device));
    EXPECT_NE(mine->instance(), Ctx().plugin->instance());
    HETRT_CHECK_OK_AND_ASSIGN(Tensor a, Tensor::Empty({64}, kU8, mine->DeviceAllocator(Ctx().device)));
    std::vector<uint8_t> out(64, 0);
    HETRT_CHECK_OK(own->CopyBytes(in.data(), 0, kHost, a.data(), 0, Ctx().device, 64));
    HETRT_CHECK_OK(own->CopyBytes(a.data(), 0, Ctx().device, out.data(), 0, kHost, 64));
    EXPECT_EQ(out, in);
    if (Ctx().profile.problems_attribute) {
      auto problems = mine->AttributeInt(Ctx().device, *Ctx().profile.problems_attribute);
      EXPECT_EQ(problems.ok() ? *problems : 0, 0) << "the second instance's driver reported problems";
    }
    kept = a;
  }  // the registry is gone; `kept` holds its instance
  std::vector<uint8_t> back(64, 0);
  HETRT_CHECK_OK(DeviceClient(mine, Ctx().device).Copy(kept.data(), 0, Ctx().device, back.data(), 0, kHost, 64));
  EXPECT_EQ(back, in);
  kept = Tensor();
  HETRT_CHECK_OK_AND_ASSIGN(Tensor b, Tensor::Empty({64}, kU8, Memory()));
  std::vector<uint8_t> out(64, 0);
  HETRT_CHECK_OK(Ctx().registry->CopyBytes(in.data(), 0, kHost, b.data(), 0, Ctx().device, 64));
  HETRT_CHECK_OK(Ctx().registry->CopyBytes(b.data(), 0, Ctx().device, out.data(), 0, kHost, 64));
  EXPECT_EQ(out, in);
}

TEST(Instances, DevicesAreCountedNamedAndDescribedByAttributes) {
  HETRT_REQUIRE_DEVICE();
  HETRT_CHECK_OK_AND_ASSIGN(auto count, Ctx().plugin->CountDevices(Ctx().device.device_type));
  EXPECT_GE(count.count, 1);
  EXPECT_EQ(Ctx().plugin->CountDevices(kDLROCM).status().code(), StatusCode::kInvalidArgument)
      << "a device type the plugin does not declare";
  HETRT_CHECK_OK_AND_ASSIGN(std::string name, Ctx().plugin->AttributeString(Ctx().device, HETRT_DEVICE_ATTR_NAME));
  EXPECT_FALSE(name.empty());
  HETRT_CHECK_OK_AND_ASSIGN(int64_t unified, Ctx().plugin->AttributeInt(Ctx().device, HETRT_DEVICE_ATTR_HOST_UNIFIED_MEMORY));
  EXPECT_EQ(unified != 0, Ctx().plugin->SharesHostMemory(Ctx().device));
  HETRT_CHECK_OK_AND_ASSIGN(int64_t total, Ctx().plugin->AttributeInt(Ctx().device, HETRT_DEVICE_ATTR_TOTAL_MEMORY));
  EXPECT_GT(total, 0);
  for (int32_t unknown : {999, 0x7777}) {
    EXPECT_EQ(Ctx().plugin->AttributeInt(Ctx().device, unknown).status().code(), StatusCode::kNotFound) << unknown;
  }
  const DLDevice beyond{Ctx().device.device_type, count.count};
  EXPECT_FALSE(Ctx().plugin->AttributeString(beyond, HETRT_DEVICE_ATTR_NAME).ok()) << DeviceToString(beyond);
}

TEST(Instances, SetDeviceAcceptsItsDevicesOnly) {
  HETRT_REQUIRE_DEVICE();
  HETRT_REQUIRE_CALL(set_device);
  const DeviceClient c = Client();
  auto args = c.Make<hetrt_set_device_args_t>();
  HETRT_CHECK_OK(c.Call(c.api()->set_device, &args, "set_device"));
  HETRT_CHECK_OK_AND_ASSIGN(auto count, Ctx().plugin->CountDevices(Ctx().device.device_type));
  args.device.device_id = count.count;
  EXPECT_FALSE(c.Call(c.api()->set_device, &args, "set_device").ok());
}

TEST(Instances, CopyRoutesAndUnknownOptionsAreAnswered) {
  HETRT_REQUIRE_DEVICE();
  EXPECT_TRUE(Ctx().plugin->CanCopy(kHost, Ctx().device));
  EXPECT_TRUE(Ctx().plugin->CanCopy(Ctx().device, kHost));
  EXPECT_TRUE(Ctx().plugin->CanCopy(Ctx().device, Ctx().device));
  const DLDevice foreign{kDLROCM, 0};
  EXPECT_FALSE(Ctx().plugin->CanCopy(foreign, Ctx().device));
  EXPECT_FALSE(Ctx().plugin->CanCopy(Ctx().device, foreign));
  EXPECT_EQ(Ctx().plugin->SetOption("no_such_option", "1").code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace hetrt::conformance
