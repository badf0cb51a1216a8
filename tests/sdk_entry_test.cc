// The SDK's entry guard (sdk/include/hetrt/sdk/entry.h) across ABI minors: an
// args struct that a later minor grew, called by an older core (the struct as
// it was introduced), by a core of the plugin's own minor, and by a newer core
// (more trailing fields than the plugin knows). Header-only SDK, no core.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "hetrt/sdk/entry.h"

struct hetrt_instance {
  int unused = 0;
};

namespace {

// As the plugin knows it: `scale` and `scaled` were appended by a later minor.
typedef struct growing_args {
  HETRT_ARGS_HEADER;
  hetrt_instance_t* self;
  int32_t value;
  int32_t doubled; /* out */
  /* appended a minor later */
  int32_t scale;     /* absent: 3 */
  int32_t scaled;    /* out */
  int32_t saw_scale; /* out: whether the caller's struct held `scale` */
} growing_args_t;
HETRT_DEFINE_ARGS_MIN_SIZE(growing_args_t, doubled); /* as plugin_abi.h declares its structs */

}  // namespace

namespace hetrt::sdk {
HETRT_SDK_ARGS_MIN_SIZE_OF(growing_args_t);
}

namespace {

using hetrt::sdk::kArgsMinSize;

hetrt_error_t* Growing(growing_args_t* args) {
  args->doubled = 2 * args->value;
  args->saw_scale = HETRT_ARGS_HAS(args, growing_args_t, scale);
  if (args->saw_scale) {
    EXPECT_EQ(args->scale, hetrt::sdk::ArgsFieldOr(args, &growing_args_t::scale, 3));
  }
  args->scaled = args->value * hetrt::sdk::ArgsFieldOr(args, &growing_args_t::scale, 3);
  return nullptr;
}

inline constexpr char kLabel[] = "entry test";
using GrowingEntry = hetrt::sdk::Entry<Growing, kLabel>;

hetrt_instance g_instance;
constexpr unsigned char kCanary = 0xA5;

// The caller's struct in a buffer of canaries: `size` bytes of it are the
// struct (as far as Args goes), everything after is not the caller's.
struct Call {
  alignas(growing_args_t) unsigned char bytes[sizeof(growing_args_t) + 64];
  size_t size;
  explicit Call(size_t struct_size, int32_t value, int32_t scale = 0) : size(struct_size) {
    std::memset(bytes, kCanary, sizeof bytes);
    growing_args_t args{};
    args.struct_size = struct_size;
    args.self = &g_instance;
    args.value = value;
    args.scale = scale;
    std::memcpy(bytes, &args, std::min(struct_size, sizeof args));
  }
  growing_args_t* args() { return reinterpret_cast<growing_args_t*>(bytes); }
  std::string Run() {
    hetrt_error_t* error = GrowingEntry::Call(args());
    if (error == nullptr) return "";
    std::string message = error->message;
    delete error;
    return message;
  }
  // Whether every byte past the caller's struct is as it was.
  bool CanariesIntact() const {
    for (size_t i = size; i < sizeof bytes; ++i)
      if (bytes[i] != kCanary) return false;
    return true;
  }
};

TEST(SdkEntry, MinimumSizeIsTheStructAsItWasIntroduced) {
  EXPECT_EQ(kArgsMinSize<growing_args_t>, offsetof(growing_args_t, doubled) + sizeof(int32_t));
  EXPECT_LT(kArgsMinSize<growing_args_t>, sizeof(growing_args_t));
  // Every ABI args struct of today is accepted at its full size, and no 2.0
  // struct's minimum exceeds it.
  EXPECT_EQ(kArgsMinSize<hetrt_copy_args_t>, offsetof(hetrt_copy_args_t, flags) + sizeof(uint32_t));
  EXPECT_LE(kArgsMinSize<hetrt_copy_args_t>, sizeof(hetrt_copy_args_t));
  EXPECT_EQ(kArgsMinSize<hetrt_module_sample_args_t>,
            offsetof(hetrt_module_sample_args_t, num_arguments) + sizeof(size_t));
}

TEST(SdkEntry, AnOlderCallersStructReadsLaterFieldsAsAbsentAndGetsItsOutputs) {
  Call call(kArgsMinSize<growing_args_t>, 21);
  ASSERT_EQ(call.Run(), "");
  EXPECT_EQ(call.args()->doubled, 42);
  EXPECT_EQ(call.args()->struct_size, kArgsMinSize<growing_args_t>) << "the caller's size is kept";
  EXPECT_TRUE(call.CanariesIntact()) << "the plugin wrote past the caller's struct";
}

TEST(SdkEntry, LaterFieldsAreSeenWhenTheCallerHasThem) {
  Call call(sizeof(growing_args_t), 5, 7);
  ASSERT_EQ(call.Run(), "");
  EXPECT_EQ(call.args()->doubled, 10);
  EXPECT_EQ(call.args()->scaled, 35);
  EXPECT_EQ(call.args()->saw_scale, 1);
  EXPECT_TRUE(call.CanariesIntact());
}

TEST(SdkEntry, AStructEndingInsideALaterFieldHasNotGotIt) {
  // Up to `scale` only: scale is there, the outputs after it are not.
  Call call(offsetof(growing_args_t, scale) + sizeof(int32_t), 4, 5);
  ASSERT_EQ(call.Run(), "");
  EXPECT_EQ(call.args()->doubled, 8);
  EXPECT_TRUE(call.CanariesIntact()) << "scaled/saw_scale were written past the caller's struct";
  Call partial(offsetof(growing_args_t, scale) + 2, 4, 5);  // half of `scale`
  ASSERT_EQ(partial.Run(), "");
  EXPECT_EQ(partial.args()->doubled, 8);
  EXPECT_TRUE(partial.CanariesIntact());
}

TEST(SdkEntry, ANewerCallersLargerStructIsAcceptedAndItsUnknownFieldsLeftAlone) {
  Call call(sizeof(growing_args_t) + 64, 3, 2);
  ASSERT_EQ(call.Run(), "");
  EXPECT_EQ(call.args()->doubled, 6);
  EXPECT_EQ(call.args()->scaled, 6);
  for (size_t i = sizeof(growing_args_t); i < sizeof call.bytes; ++i)
    EXPECT_EQ(call.bytes[i], kCanary) << "the plugin wrote a field it does not know, at byte " << i;
}

TEST(SdkEntry, StructsSmallerThanIntroducedNullOrWithoutSelfAreRefused) {
  Call small(kArgsMinSize<growing_args_t> - 1, 1);
  const std::string message = small.Run();
  EXPECT_NE(message.find("args struct too small: struct_size " + std::to_string(small.size)), std::string::npos)
      << message;
  EXPECT_TRUE(small.CanariesIntact());
  hetrt_error_t* null_args = GrowingEntry::Call(nullptr);
  ASSERT_NE(null_args, nullptr);
  EXPECT_EQ(null_args->code, HETRT_STATUS_INVALID_ARGUMENT);
  delete null_args;
  Call no_self(sizeof(growing_args_t), 1);
  no_self.args()->self = nullptr;
  EXPECT_NE(no_self.Run().find("NULL instance"), std::string::npos);
}

}  // namespace
