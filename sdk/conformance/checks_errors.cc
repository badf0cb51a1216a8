// Errors: every refusal is an error value with a code and a message, never a
// crash; concurrent use from 8 threads.
#include <atomic>
#include <thread>
#include <vector>

#include "conformance.h"

namespace hetrt::conformance {
namespace {

constexpr DLDevice kHost{kDLCPU, 0};

// Calls `fn` and checks it failed with a known code and a non-empty message
// (read through the plugin's own error_message), then releases the error.
template <class Args>
void ExpectErrorValue(hetrt_error_t* (*fn)(Args*), Args* args, const std::string& what) {
  if (fn == nullptr) return;
  const hetrt_plugin_api_t* api = Ctx().plugin->api();
  hetrt_error_t* error = fn(args);
  ASSERT_NE(error, nullptr) << what << " succeeded";
  auto message = AbiArgs<hetrt_error_message_args_t>();
  message.error = error;
  EXPECT_EQ(api->error_message(&message), nullptr);
  ASSERT_NE(message.message, nullptr) << what;
  EXPECT_GT(std::string(message.message).size(), 0u) << what << ": empty message";
  EXPECT_GE(message.code, HETRT_STATUS_INVALID_ARGUMENT) << what << ": code " << message.code;
  EXPECT_LE(message.code, HETRT_STATUS_INTERNAL) << what << ": code " << message.code;
  auto destroy = AbiArgs<hetrt_error_destroy_args_t>();
  destroy.error = error;
  EXPECT_EQ(api->error_destroy(&destroy), nullptr);
}

TEST(Errors, UnknownOptionIsNotFoundWithAMessage) {
  const hetrt_plugin_api_t* api = Ctx().plugin->api();
  if (api->set_option == nullptr) GTEST_SKIP() << "the plugin has no set_option";
  auto args = AbiArgs<hetrt_set_option_args_t>();
  args.self = Ctx().plugin->instance();
  args.key = "hetrt_conformance_no_such_option";
  args.value = "1";
  const Status status = Ctx().plugin->Consume(api->set_option(&args));
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kNotFound) << status.message();
  ExpectErrorValue(api->set_option, &args, "set_option(unknown key)");
}

TEST(Errors, TruncatedArgsAndNullInstanceAreRefused) {
  Plugin* p = Ctx().plugin;
  if (p->device_api() == nullptr) GTEST_SKIP() << "the plugin declares no device types";
  const hetrt_device_api_t* api = p->device_api();
  DeviceClient c = Client();
  {
    auto args = c.Make<hetrt_allocate_args_t>();
    args.struct_size = sizeof(size_t);  // holds no field a call needs
    args.nbytes = 16;
    ExpectErrorValue(api->allocate, &args, "allocate with struct_size 8");
  }
  {
    auto args = c.Make<hetrt_device_count_args_t>();
    args.struct_size = offsetof(hetrt_device_count_args_t, device_type);
    ExpectErrorValue(api->device_count, &args, "device_count without device_type");
  }
  {
    auto args = c.Make<hetrt_copy_args_t>();
    args.self = nullptr;
    ExpectErrorValue(api->copy, &args, "copy with a NULL instance");
  }
  {
    auto args = c.Make<hetrt_stream_create_args_t>();
    args.self = nullptr;
    ExpectErrorValue(api->stream_create, &args, "stream_create with a NULL instance");
  }
}

TEST(Errors, BadDeviceCallsAreErrorValues) {
  HETRT_REQUIRE_DEVICE();
  DeviceClient c = Client();
  const hetrt_device_api_t* api = c.api();
  {
    auto args = c.Make<hetrt_allocate_args_t>();
    args.device.device_id = 1 << 20;
    args.nbytes = 16;
    ExpectErrorValue(api->allocate, &args, "allocate on device 1048576");
  }
  {
    auto args = c.Make<hetrt_device_attribute_args_t>();
    args.device.device_id = 1 << 20;
    args.attribute = HETRT_DEVICE_ATTR_NAME;
    ExpectErrorValue(api->device_attribute, &args, "device_attribute of device 1048576");
  }
  if (api->event_elapsed_ms && api->event_create) {
    // Elapsed time between events that were never recorded has nothing to measure.
    HETRT_CHECK_OK_AND_ASSIGN(hetrt_event_t * a, c.NewEvent(HETRT_EVENT_TIMING));
    HETRT_CHECK_OK_AND_ASSIGN(hetrt_event_t * b, c.NewEvent(HETRT_EVENT_TIMING));
    auto args = c.Make<hetrt_event_elapsed_args_t>();
    args.start = a;
    args.end = b;
    hetrt_error_t* error = api->event_elapsed_ms(&args);
    if (error != nullptr) {
      const Status status = Ctx().plugin->Consume(error);
      EXPECT_GT(status.message().size(), 0u);
    } else {
      EXPECT_GE(args.milliseconds, 0.0);
    }
    HETRT_EXPECT_OK(c.EventCall(api->event_destroy, a));
    HETRT_EXPECT_OK(c.EventCall(api->event_destroy, b));
  }
}

// 8 threads, each with its own stream and buffers, allocating, copying both
// ways and checking bytes at once, many times over.
TEST(Threads, ConcurrentCallsFrom8Threads) {
  HETRT_REQUIRE_DEVICE();
  DeviceClient c = Client();
  const bool streams = c.api()->stream_create != nullptr;
  std::atomic<int> failures{0};
  std::vector<std::string> first_error(8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      auto fail = [&](const std::string& why) {
        if (failures.fetch_add(1) == 0 || first_error[static_cast<size_t>(t)].empty())
          first_error[static_cast<size_t>(t)] = why;
      };
      hetrt_stream_t* stream = nullptr;
      if (streams) {
        auto s = c.NewStream();
        if (!s.ok()) return fail(s.status().message());
        stream = s.value();
      }
      for (int round = 0; round < 20; ++round) {
        const size_t n = 1000 + static_cast<size_t>(t * 37 + round);
        std::vector<uint8_t> in(n, static_cast<uint8_t>(t * 16 + round)), out(n, 0);
        auto dev = c.Allocate(n);
        if (!dev.ok()) return fail(dev.status().message());
        Status s = c.Copy(in.data(), 0, kHost, dev->data, 0, c.device(), n, stream, HETRT_COPY_BLOCKING);
        if (s.ok()) s = c.Copy(dev->data, 0, c.device(), out.data(), 0, kHost, n, stream, HETRT_COPY_BLOCKING);
        if (s.ok() && out != in) s = Internal("thread " + std::to_string(t) + " read back other bytes");
        const Status freed = c.Free(dev->data);
        if (!s.ok()) return fail(s.message());
        if (!freed.ok()) return fail(freed.message());
      }
      if (stream) {
        const Status s = c.DestroyStream(stream);
        if (!s.ok()) fail(s.message());
      }
    });
  }
  for (std::thread& t : threads) t.join();
  std::string errors;
  for (const std::string& e : first_error)
    if (!e.empty()) errors += e + "; ";
  EXPECT_EQ(failures.load(), 0) << errors;
}

}  // namespace
}  // namespace hetrt::conformance
