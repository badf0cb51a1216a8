// ABI evolution both ways: every call the plugin offers, with its args struct
// as the oldest core of this major sends it (the struct's size in the minor
// that introduced it, hetrt/sdk/args_size.h) and as a newer core sends it
// (trailing fields the plugin does not know). Both must work, and the plugin
// must write nothing past the caller's struct.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "conformance.h"
#include "hetrt/base/dtype.h"
#include "hetrt/sdk/args_size.h"

namespace hetrt::conformance {
namespace {

constexpr DLDevice kHost{kDLCPU, 0};
constexpr size_t kNewerFieldBytes = 64;
constexpr unsigned char kNotTheCallers = 0xA5;  // bytes past the caller's struct

enum class Caller { kOldest, kNewer };

// Calls `fn` with a copy of `args` sized as `caller` sends it, followed by
// bytes that are not the caller's (for a newer caller: fields of its minor,
// garbage to this plugin); copies the outputs back into `args`.
template <class Args>
hetrt_error_t* CallAs(Caller caller, hetrt_error_t* (*fn)(Args*), Args* args, const char* name) {
  struct alignas(Args) Sent {
    unsigned char bytes[sizeof(Args) + kNewerFieldBytes];
  } sent;
  std::memset(sent.bytes, kNotTheCallers, sizeof sent.bytes);
  const size_t size = caller == Caller::kOldest ? sdk::kArgsMinSize<Args> : sizeof sent.bytes;
  std::memcpy(sent.bytes, args, std::min(size, sizeof(Args)));
  std::memcpy(sent.bytes, &size, sizeof size);  // struct_size comes first
  hetrt_error_t* error = fn(reinterpret_cast<Args*>(sent.bytes));
  const size_t theirs = caller == Caller::kOldest ? size : sizeof(Args);
  for (size_t i = theirs; i < sizeof sent.bytes; ++i) {
    if (sent.bytes[i] != kNotTheCallers) {
      ADD_FAILURE() << name << " wrote byte " << i << " past the fields the caller has (struct_size " << size << ")";
      break;
    }
  }
  std::memcpy(static_cast<void*>(args), sent.bytes, std::min(size, sizeof(Args)));
  args->struct_size = sizeof(Args);
  return error;
}

template <class Args>
Status CallAsStatus(Caller caller, hetrt_error_t* (*fn)(Args*), Args* args, const char* name) {
  if (fn == nullptr) return Unimplemented(std::string("no ") + name);
  return Ctx().plugin->Consume(CallAs(caller, fn, args, name));
}

#define HETRT_EXPECT_CALL_OK(fn, args) HETRT_EXPECT_OK(CallAsStatus(caller, fn, &(args), #fn))

void SetLastError(const char*) {}
void Log(hetrt_log_level_t, const char*, const char*) {}
constexpr hetrt_host_api_t kHostApi{sizeof(hetrt_host_api_t), HETRT_PLUGIN_ABI_MAJOR, HETRT_PLUGIN_ABI_MINOR,
                                    SetLastError, Log};

// Instances, options, errors, global functions, the parallel and whole-model
// tables: what every plugin has.
void PluginCalls(Caller caller) {
  const hetrt_plugin_api_t* api = Ctx().plugin->api();
  auto create = AbiArgs<hetrt_instance_create_args_t>();
  create.host = &kHostApi;
  HETRT_EXPECT_CALL_OK(api->instance_create, create);
  ASSERT_NE(create.instance, nullptr) << "instance_create gave no instance";
  hetrt_instance_t* self = create.instance;

  // An unknown option is NOT_FOUND, and its error reads and releases as any other.
  auto option = AbiArgs<hetrt_set_option_args_t>();
  option.self = self;
  option.key = "hetrt_conformance_no_such_option";
  option.value = "1";
  hetrt_error_t* error = CallAs(caller, api->set_option, &option, "set_option");
  ASSERT_NE(error, nullptr) << "set_option accepted an unknown key";
  auto message = AbiArgs<hetrt_error_message_args_t>();
  message.error = error;
  EXPECT_EQ(CallAs(caller, api->error_message, &message, "error_message"), nullptr);
  EXPECT_EQ(message.code, HETRT_STATUS_NOT_FOUND) << (message.message ? message.message : "(no message)");
  ASSERT_NE(message.message, nullptr);
  EXPECT_NE(std::string(message.message).find("hetrt_conformance_no_such_option"), std::string::npos)
      << message.message;
  auto destroy_error = AbiArgs<hetrt_error_destroy_args_t>();
  destroy_error.error = error;
  EXPECT_EQ(CallAs(caller, api->error_destroy, &destroy_error, "error_destroy"), nullptr);

  if (api->global_functions != nullptr) {
    auto globals = AbiArgs<hetrt_global_functions_args_t>();
    globals.self = self;
    HETRT_EXPECT_CALL_OK(api->global_functions, globals);
    EXPECT_TRUE(globals.num_functions == 0 || globals.functions != nullptr);
  }
  if (const hetrt_parallel_api_t* parallel = Ctx().plugin->parallel_api()) {
    auto threads = AbiArgs<hetrt_parallel_num_threads_args_t>();
    threads.self = self;
    HETRT_EXPECT_CALL_OK(parallel->num_threads, threads);
    EXPECT_GT(threads.num_threads, 0);
  }
  const hetrt_whole_model_api_t* whole = Ctx().plugin->whole_model_api();
  if (whole != nullptr && whole->num_device_names > 0) {
    auto accepts = AbiArgs<hetrt_whole_model_accepts_args_t>();
    accepts.self = self;
    accepts.path = "/nonexistent/hetrt-conformance-model.tar";
    accepts.device = whole->device_names[0];
    accepts.accepted = 1;
    HETRT_EXPECT_CALL_OK(whole->accepts, accepts);
    EXPECT_EQ(accepts.accepted, 0) << "a model file that does not exist was accepted";
  }

  auto destroy = AbiArgs<hetrt_instance_destroy_args_t>();
  destroy.self = self;
  HETRT_EXPECT_CALL_OK(api->instance_destroy, destroy);
}

// Every device call once, in an order that leaves nothing behind.
void DeviceCalls(Caller caller) {
  const DeviceClient c = Client();
  const hetrt_device_api_t* api = c.api();
  auto count = c.Make<hetrt_device_count_args_t>();
  count.device_type = c.device().device_type;
  HETRT_EXPECT_CALL_OK(api->device_count, count);
  EXPECT_GT(count.count, c.device().device_id);
  auto name = c.Make<hetrt_device_attribute_args_t>();
  name.attribute = HETRT_DEVICE_ATTR_NAME;
  HETRT_EXPECT_CALL_OK(api->device_attribute, name);
  EXPECT_TRUE(name.string != nullptr && name.string[0] != '\0') << "no device name";
  auto can_copy = c.Make<hetrt_can_copy_args_t>();
  can_copy.src_device = c.device();
  can_copy.dst_device = c.device();
  HETRT_EXPECT_CALL_OK(api->can_copy, can_copy);
  if (api->set_device != nullptr) {
    auto set_device = c.Make<hetrt_set_device_args_t>();
    HETRT_EXPECT_CALL_OK(api->set_device, set_device);
  }

  constexpr uint64_t kBytes = 1000;
  auto allocate = c.Make<hetrt_allocate_args_t>();
  allocate.nbytes = kBytes;
  allocate.alignment = 64;
  allocate.kind = HETRT_MEMORY_DEVICE;
  HETRT_EXPECT_CALL_OK(api->allocate, allocate);
  ASSERT_NE(allocate.data, nullptr) << "allocate gave no memory";
  auto stats = c.Make<hetrt_memory_stats_args_t>();
  if (api->memory_stats != nullptr) {
    HETRT_EXPECT_CALL_OK(api->memory_stats, stats);
    EXPECT_GE(stats.bytes_in_use, kBytes);
  }

  auto stream = c.Make<hetrt_stream_create_args_t>();
  HETRT_EXPECT_CALL_OK(api->stream_create, stream);
  auto set_current = c.Make<hetrt_stream_current_args_t>();
  set_current.stream = stream.stream;
  HETRT_EXPECT_CALL_OK(api->stream_set_current, set_current);
  auto get_current = c.Make<hetrt_stream_current_args_t>();
  HETRT_EXPECT_CALL_OK(api->stream_get_current, get_current);
  EXPECT_EQ(get_current.stream, stream.stream);

  std::vector<uint8_t> in(kBytes), out(kBytes, 0);
  for (size_t i = 0; i < kBytes; ++i) in[i] = static_cast<uint8_t>(i * 13 + 1);
  auto to_device = c.Make<hetrt_copy_args_t>();
  to_device.src = in.data();
  to_device.src_device = kHost;
  to_device.dst = allocate.data;
  to_device.dst_device = c.device();
  to_device.nbytes = kBytes;
  to_device.stream = stream.stream;
  HETRT_EXPECT_CALL_OK(api->copy, to_device);
  auto event = c.Make<hetrt_event_create_args_t>();
  event.flags = HETRT_EVENT_TIMING;
  HETRT_EXPECT_CALL_OK(api->event_create, event);
  auto record = c.Make<hetrt_event_record_args_t>();
  record.event = event.event;
  record.stream = stream.stream;
  HETRT_EXPECT_CALL_OK(api->event_record, record);
  auto wait = c.Make<hetrt_stream_wait_event_args_t>();
  wait.event = event.event;  // the default stream waits for it
  HETRT_EXPECT_CALL_OK(api->stream_wait_event, wait);
  auto to_host = c.Make<hetrt_copy_args_t>();
  to_host.src = allocate.data;
  to_host.src_device = c.device();
  to_host.dst = out.data();
  to_host.dst_device = kHost;
  to_host.nbytes = kBytes;
  to_host.flags = HETRT_COPY_BLOCKING;
  HETRT_EXPECT_CALL_OK(api->copy, to_host);
  EXPECT_EQ(out, in) << "the bytes did not round-trip";
  // The event calls that take only the event.
  const auto event_args = [&] {
    auto args = c.Make<hetrt_event_args_t>();
    args.event = event.event;
    return args;
  };
  auto event_sync = event_args();
  HETRT_EXPECT_CALL_OK(api->event_synchronize, event_sync);
  auto query = event_args();
  HETRT_EXPECT_CALL_OK(api->event_query, query);
  EXPECT_EQ(query.complete, 1);
  if (api->event_timestamp != nullptr) {
    auto stamp = c.Make<hetrt_event_timestamp_args_t>();
    stamp.event = event.event;
    HETRT_EXPECT_CALL_OK(api->event_timestamp, stamp);
  }
  if (api->event_elapsed_ms != nullptr) {
    auto elapsed = c.Make<hetrt_event_elapsed_args_t>();
    elapsed.start = event.event;
    elapsed.end = event.event;
    elapsed.milliseconds = -1;
    HETRT_EXPECT_CALL_OK(api->event_elapsed_ms, elapsed);
    EXPECT_GE(elapsed.milliseconds, 0.0);
  }
  if (api->device_clock != nullptr) {
    auto clock = c.Make<hetrt_device_clock_args_t>();
    HETRT_EXPECT_CALL_OK(api->device_clock, clock);
    EXPECT_GT(clock.host_ns, 0u);
  }
  if (api->workspace_alloc != nullptr && api->workspace_free != nullptr) {
    auto workspace = c.Make<hetrt_workspace_args_t>();
    workspace.nbytes = 256;
    HETRT_EXPECT_CALL_OK(api->workspace_alloc, workspace);
    EXPECT_NE(workspace.data, nullptr);
    HETRT_EXPECT_CALL_OK(api->workspace_free, workspace);
  }
  auto sync = c.Make<hetrt_stream_args_t>();
  sync.stream = stream.stream;
  HETRT_EXPECT_CALL_OK(api->stream_synchronize, sync);

  auto event_destroy = event_args();
  HETRT_EXPECT_CALL_OK(api->event_destroy, event_destroy);
  set_current.stream = nullptr;
  HETRT_EXPECT_CALL_OK(api->stream_set_current, set_current);
  EXPECT_EQ(set_current.previous, stream.stream);
  auto stream_destroy = c.Make<hetrt_stream_args_t>();
  stream_destroy.stream = stream.stream;
  HETRT_EXPECT_CALL_OK(api->stream_destroy, stream_destroy);
  auto free = c.Make<hetrt_free_args_t>();
  free.data = allocate.data;
  free.kind = HETRT_MEMORY_DEVICE;
  HETRT_EXPECT_CALL_OK(api->free, free);
}

// The module table through the plugin's sample module.
void ModuleCalls(Caller caller) {
  const hetrt_module_api_t* api = Ctx().plugin->module_api();
  if (!HETRT_STRUCT_HAS(api, hetrt_module_api_t, sample) || api->sample == nullptr) return;
  const DeviceClient c = Client();
  auto sample = c.Make<hetrt_module_sample_args_t>();
  HETRT_EXPECT_CALL_OK(api->sample, sample);
  ASSERT_NE(sample.data, nullptr);
  auto load = AbiArgs<hetrt_module_load_args_t>();
  load.self = Ctx().plugin->instance();
  load.type_key = sample.type_key;
  load.data = sample.data;
  load.size = sample.size;
  HETRT_EXPECT_CALL_OK(api->load, load);
  ASSERT_NE(load.module, nullptr);
  EXPECT_EQ(load.consumed, sample.size);
  auto get = AbiArgs<hetrt_module_get_function_args_t>();
  get.module = load.module;
  get.name = sample.function_name;
  HETRT_EXPECT_CALL_OK(api->get_function, get);
  EXPECT_EQ(get.found, 1);
  const char* names[4] = {};
  auto list = AbiArgs<hetrt_module_list_functions_args_t>();
  list.module = load.module;
  list.names = names;
  list.capacity = 4;
  HETRT_EXPECT_CALL_OK(api->list_functions, list);
  EXPECT_GE(list.count, 1u);
  auto save = AbiArgs<hetrt_module_save_args_t>();
  save.module = load.module;
  HETRT_EXPECT_CALL_OK(api->save, save);
  EXPECT_GT(save.size, 0u);
  auto destroy = AbiArgs<hetrt_module_destroy_args_t>();
  destroy.module = load.module;
  HETRT_EXPECT_CALL_OK(api->destroy, destroy);
}

void EveryCall(Caller caller) {
  {
    SCOPED_TRACE("plugin table");
    PluginCalls(caller);
  }
  if (Ctx().has_device) {
    SCOPED_TRACE("device table on " + DeviceToString(Ctx().device));
    DeviceCalls(caller);
    SCOPED_TRACE("module table");
    ModuleCalls(caller);
  }
}

TEST(AbiEvolution, AnOlderCoresArgsStructsAsIntroducedWork) { EveryCall(Caller::kOldest); }

TEST(AbiEvolution, ANewerCoresLargerArgsStructsWork) { EveryCall(Caller::kNewer); }

}  // namespace
}  // namespace hetrt::conformance
