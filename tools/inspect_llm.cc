// `hetrt inspect`'s part for a language-model library (MLC-LLM / TVM's
// relax.frontend.nn LLM flow): its LLM functions, the metadata it carries,
// the KV cache it creates (made once, at a minimal size, to read its
// configuration) and, with its weights folder, every tensor-cache record.
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "hetrt/base/dtype.h"
#include "hetrt/exec/open_model.h"
#include "hetrt/relax/paged_kv_cache.h"
#include "hetrt/relax/tensor_cache.h"

namespace hetrt::cli {

void PrintLlmSummary(const std::string& library, const std::string& weights) {
  std::printf("language model:\n");
  auto vm = OpenRelaxVm(library, {{kDLCPU, 0}});
  if (!vm.ok()) {
    std::printf("  cannot create its VM on the CPU: %s\n", vm.status().message().c_str());
  } else {
    std::string functions;
    for (const char* name :
         {"embed", "prefill", "decode", "batch_prefill", "batch_decode", "batch_verify", "get_logits",
          "softmax_with_temperature", "create_tir_paged_kv_cache", "create_flashinfer_paged_kv_cache", "_metadata"})
      if ((*vm)->FindFunction(name).ok()) functions += std::string(" ") + name;
    std::printf("  functions:%s\n", functions.c_str());
    if (auto m = (*vm)->FindFunction("_metadata"); m.ok()) {
      auto text = (*vm)->Invoke(*m, {});
      if (text.ok() && text->is(RelaxValue::Kind::kString)) {
        auto meta = nlohmann::json::parse(text->string(), nullptr, false);
        if (meta.is_object()) {
          std::printf("  metadata:");
          for (const char* key : {"model_type", "quantization", "context_window_size", "prefill_chunk_size",
                                  "max_batch_size", "sliding_window_size", "kv_state_kind", "tensor_parallel_shards"})
            if (meta.contains(key)) std::printf(" %s=%s", key, meta[key].dump().c_str());
          if (meta.contains("params") && meta["params"].is_array()) std::printf(" params=%zu", meta["params"].size());
          std::printf("\n");
        }
      }
    }
    if (auto create = (*vm)->FindFunction("create_tir_paged_kv_cache"); create.ok()) {
      std::vector<RelaxValue> args = {RelaxValue::Shape({1}), RelaxValue::Shape({16}), RelaxValue::Shape({16}),
                                      RelaxValue::Shape({16})};
      if ((*vm)->ParamNames(*create).size() == 5) args.push_back(RelaxValue::Shape({0}));
      auto kv = (*vm)->Invoke(*create, args);
      const PagedKvCache* cache = kv.ok() ? kv->object_as<PagedKvCache>() : nullptr;
      if (cache == nullptr) {
        std::printf("  KV cache: not supported: %s\n",
                    kv.ok() ? kv->Describe().c_str() : kv.status().message().c_str());
      } else {
        const PagedKvCacheConfig& c = cache->config();
        static const char* kRope[] = {"none", "normal", "inline"};
        std::printf(
            "  KV cache: paged (TIR kernels), %lld layers, %lld query heads, %lld KV heads, head dim %lld, "
            "%s, RoPE %s (theta %g, scale %g), page size %d, on the model's device\n",
            static_cast<long long>(c.num_layers), static_cast<long long>(c.num_qo_heads),
            static_cast<long long>(c.num_kv_heads), static_cast<long long>(c.head_dim),
            DataTypeToString(c.dtype).c_str(), kRope[static_cast<int>(c.rope_mode)], c.rope_theta, c.rope_scale,
            c.page_size);
        const int64_t per_token = c.num_layers * 2 * c.num_kv_heads * c.head_dim * ((c.dtype.bits + 7) / 8);
        std::printf("            %lld bytes of K/V per token\n", static_cast<long long>(per_token));
      }
    }
  }
  if (weights.empty()) {
    std::printf("  weights: no tensor-cache.json beside the library (pass the model folder)\n");
    return;
  }
  auto index = TensorCacheIndex::Open(weights);
  if (!index.ok()) {
    std::printf("  weights: %s\n", index.status().message().c_str());
    return;
  }
  std::map<std::string, size_t> dtypes;
  for (const TensorCacheRecord& r : index->records()) ++dtypes[DataTypeToString(r.dtype)];
  std::string kinds;
  for (const auto& [dtype, n] : dtypes) kinds += " " + std::to_string(n) + " " + dtype;
  std::printf("  weights: %s: %zu records in %zu shards, %.2f MiB (%s)\n", weights.c_str(), index->records().size(),
              index->shard_paths().size(), index->total_bytes() / 1048576.0, kinds.substr(1).c_str());
  for (const TensorCacheRecord& r : index->records())
    std::printf("    %s %s%s%s\n", r.name.c_str(), DataTypeToString(r.dtype).c_str(), ShapeToString(r.shape).c_str(),
                r.format == TensorCacheRecord::Format::kF32ToBf16 ? " (stored as bfloat16)" : "");
}

}  // namespace hetrt::cli
