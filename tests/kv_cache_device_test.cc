// The paged KV cache on real plugin devices (OpenCL on PoCL, Vulkan on
// lavapipe): pages and temporaries in the device's memory, the auxiliary
// arrays packed into one device buffer (read back here through the plugin and
// compared with the layout's plan), and the attention kernels called in TVM's
// order with their argument lists. The kernels are recorders: no TVM library
// for these devices is at hand, so each call records its arguments and reads
// the int32 arrays it was given back from the device.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "hetrt/base/dtype.h"
#include "hetrt/plugin_host/plugin_registry.h"
#include "hetrt/relax/paged_kv_cache.h"
#include "test_support.h"

namespace hetrt {
namespace {

struct RecordedCall {
  std::string slot;
  std::vector<DLTensor> tensors;             // as passed (shape pointers not kept)
  std::vector<std::vector<int64_t>> shapes;  // theirs
  std::vector<std::vector<int32_t>> int32s;  // int32 tensors read back from the device
  std::vector<int64_t> ints;
  std::vector<double> reals;
};

class Recorder {
 public:
  explicit Recorder(Device device) : device_(device) {}
  const PackedFunc* Slot(const std::string& name) {
    slots_.push_back(std::make_unique<Named>(Named{this, name}));
    funcs_.push_back(std::make_unique<PackedFunc>(PackedFunc{&Trampoline, slots_.back().get()}));
    return funcs_.back().get();
  }
  std::vector<RecordedCall> calls;
  std::vector<std::string> Order() const {
    std::vector<std::string> out;
    for (const RecordedCall& c : calls) out.push_back(c.slot);
    return out;
  }

 private:
  struct Named {
    Recorder* self;
    std::string name;
  };
  static int32_t Trampoline(hetrt_value_t* args, int32_t* codes, int32_t n, hetrt_value_t*, int32_t*, void* r) {
    auto* named = static_cast<Named*>(r);
    RecordedCall call{named->name, {}, {}, {}, {}, {}};
    for (int32_t i = 0; i < n; ++i) {
      if (codes[i] == HETRT_TYPE_INT) call.ints.push_back(args[i].v_int64);
      if (codes[i] == HETRT_TYPE_FLOAT) call.reals.push_back(args[i].v_float64);
      if (codes[i] != HETRT_TYPE_DLTENSOR) continue;
      const auto* dl = static_cast<const DLTensor*>(args[i].v_handle);
      call.tensors.push_back(*dl);
      call.shapes.emplace_back(dl->shape, dl->shape + dl->ndim);
      std::vector<int32_t> values;
      if (dl->dtype.code == kDLInt && dl->dtype.bits == 32) {
        const int64_t count = dl->ndim == 0 ? 1 : dl->shape[0];
        values.resize(static_cast<size_t>(count));
        if (count > 0) {
          EXPECT_TRUE(named->self->device_
                          .Copy(dl->data, dl->byte_offset, dl->device, values.data(), 0, {kDLCPU, 0},
                                static_cast<uint64_t>(count) * 4)
                          .ok());
        }
      }
      call.int32s.push_back(std::move(values));
    }
    named->self->calls.push_back(std::move(call));
    return 0;
  }
  Device device_;
  std::vector<std::unique_ptr<Named>> slots_;
  std::vector<std::unique_ptr<PackedFunc>> funcs_;
};

void RunOn(DLDevice where) {
  auto device = PluginRegistry::Global().DeviceFor(where);
  ASSERT_TRUE(device.ok()) << device.status().ToString();
  Recorder rec(*device);
  PagedKvKernels k;
  k.transpose_append = rec.Slot("append");
  k.prefill_ragged = rec.Slot("ragged");
  k.prefill_paged = rec.Slot("paged_prefill");
  k.decode_paged = rec.Slot("decode");
  k.merge = rec.Slot("merge");
  k.split_rotary = rec.Slot("split_rotary");
  k.copy_single_page = rec.Slot("copy_page");
  PagedKvCacheConfig c;
  c.max_batch_size = 2;
  c.total_token_capacity = 64;
  c.prefill_chunk_size = 16;
  c.num_layers = 2;
  c.num_qo_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 16;
  c.device = where;
  HETRT_ASSERT_OK_AND_ASSIGN(auto cache, PagedKvCache::Create(c, k, Tensor(), *device, nullptr));
  EXPECT_GT(cache->device_bytes(), 0u);
  Allocator& memory = device->allocator();
  const DLDataType f32{kDLFloat, 32, 1};
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor qkv, Tensor::Empty({16, 8, 16}, f32, memory));
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor o, Tensor::Empty({16, 4, 16}, f32, memory));

  // Prefill of two empty sequences (3 and 2 tokens): split, ragged, append.
  HETRT_ASSERT_OK(cache->AddSequence(0));
  HETRT_ASSERT_OK(cache->AddSequence(1));
  const int64_t ids[] = {0, 1}, prompt[] = {3, 2}, one[] = {1, 1};
  HETRT_ASSERT_OK(cache->BeginForward(ids, prompt));
  HETRT_ASSERT_OK(cache->AttentionWithFusedQkv(0, 0.25, *qkv.dl(), *o.dl()));
  EXPECT_EQ(rec.Order(), (std::vector<std::string>{"split_rotary", "ragged", "append"}));
  const RecordedCall& split = rec.calls[0];
  ASSERT_EQ(split.tensors.size(), 5u);
  EXPECT_EQ(split.shapes[0], (std::vector<int64_t>{5, 8, 16}));       // qkv: the forward's 5 rows
  EXPECT_EQ(split.int32s[1], (std::vector<int32_t>{0, 1, 2, 0, 1}));  // query positions, on the device
  EXPECT_EQ(split.tensors[1].byte_offset, 0u);  // first in the buffer, as get_query_positions needs
  for (const DLTensor& t : split.tensors) EXPECT_EQ(t.device.device_type, where.device_type);
  EXPECT_EQ(split.ints, (std::vector<int64_t>{1}));  // RoPE applied (normal mode)
  const RecordedCall& ragged = rec.calls[1];
  EXPECT_EQ(ragged.int32s[1], (std::vector<int32_t>{0, 3, 5}));  // qo indptr = the append indptr
  EXPECT_EQ(ragged.int32s[6], (std::vector<int32_t>{0, 0}));     // sequence lengths before
  EXPECT_EQ(ragged.ints, (std::vector<int64_t>{1, 0}));          // causal, no inline RoPE
  EXPECT_EQ(ragged.reals, (std::vector<double>{1, 10000, 0.25}));
  const RecordedCall& append = rec.calls[2];
  EXPECT_EQ(append.shapes[0], (std::vector<int64_t>{5, 2, 2, 16, 16}));  // layer 0's pages
  EXPECT_EQ(append.int32s[3], (std::vector<int32_t>{0, 1, 2, 16, 17}));  // page 0 then page 1
  // The other layer sees the same arrays without another copy.
  void* layer0_pages = append.tensors[0].data;
  rec.calls.clear();
  HETRT_ASSERT_OK(cache->AttentionWithFusedQkv(1, 0.25, *qkv.dl(), *o.dl()));
  EXPECT_EQ(rec.calls[2].int32s[3], (std::vector<int32_t>{0, 1, 2, 16, 17}));
  EXPECT_NE(rec.calls[2].tensors[0].data, layer0_pages);  // layer 1's pages
  HETRT_ASSERT_OK(cache->EndForward());

  // Decode one token each: split, append (first), decode over the pages.
  rec.calls.clear();
  HETRT_ASSERT_OK(cache->BeginForward(ids, one));
  HETRT_ASSERT_OK(cache->AttentionWithFusedQkv(0, 0.25, *qkv.dl(), *o.dl()));
  EXPECT_EQ(rec.Order(), (std::vector<std::string>{"split_rotary", "append", "decode"}));
  const RecordedCall& decode = rec.calls[2];
  ASSERT_EQ(decode.int32s.size(), 9u);
  const KvForwardPlan& plan = cache->layout().plan();
  EXPECT_EQ(decode.int32s[2], plan.depths[0].page_indptr);
  EXPECT_EQ(decode.int32s[3], plan.depths[0].page_indices);
  EXPECT_EQ(decode.int32s[4], (std::vector<int32_t>{4, 3}));  // last page lengths, the new tokens in
  EXPECT_EQ(decode.int32s[6], (std::vector<int32_t>{3, 2}));  // query positions
  EXPECT_EQ(rec.calls[1].int32s[3], (std::vector<int32_t>{3, 18}));
  HETRT_ASSERT_OK(cache->EndForward());

  // A fork inside a page copies its partial page on every layer.
  rec.calls.clear();
  HETRT_ASSERT_OK(cache->ForkSequence(0, 2, 2));
  ASSERT_EQ(rec.Order(), (std::vector<std::string>{"copy_page", "copy_page"}));
  EXPECT_EQ(rec.calls[0].ints.back(), 2);  // two slots
  HETRT_ASSERT_OK(cache->RemoveSequence(2));
  HETRT_ASSERT_OK(cache->RemoveSequence(0));
  HETRT_ASSERT_OK(cache->RemoveSequence(1));
  EXPECT_EQ(cache->num_available_pages(), cache->layout().num_total_pages());
}

TEST(KvCacheOnDevices, OpenClHoldsPagesAndGetsTheArraysInOneBuffer) {
  HETRT_REQUIRE_OPENCL();
  RunOn({kDLOpenCL, 0});
}

TEST(KvCacheOnDevices, VulkanHoldsPagesAndGetsTheArraysInOneBuffer) {
  auto plugin = PluginRegistry::Global().ForDevice({kDLVulkan, 0});
  if (!plugin.ok()) HETRT_MISSING("vulkan", "no Vulkan device: " << plugin.status().message());
  RunOn({kDLVulkan, 0});
}

TEST(KvCacheOnDevices, TheCpuWritesTheArraysInPlace) { RunOn({kDLCPU, 0}); }

}  // namespace
}  // namespace hetrt
