// Deterministic mutation fuzzing of every parser, run in each CI build: real
// inputs (fixtures and hetrt-written files) are bit-flipped, truncated,
// spliced and have integers replaced by extreme values. The deeper,
// coverage-guided runs use the same entry points under libFuzzer
// (-DHETRT_BUILD_FUZZERS=ON with clang; see docs/fuzzing.md).
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "fuzz/fuzz_targets.h"
#include "hetrt/sdk/byte_stream.h"
#include "hetrt/formats/npy.h"
#include "hetrt/module/module_loader.h"
#include "test_support.h"

namespace hetrt {
namespace {

using Target = void (*)(const uint8_t*, size_t);

std::vector<uint8_t> Mutate(const std::vector<uint8_t>& seed, std::mt19937_64& rng) {
  std::vector<uint8_t> m = seed;
  const int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits; ++e) {
    if (m.empty()) m.push_back(0);
    const size_t pos = rng() % m.size();
    switch (rng() % 6) {
      case 0: m[pos] ^= static_cast<uint8_t>(1u << (rng() % 8)); break;
      case 1: m.resize(pos); break;
      case 2: m[pos] = static_cast<uint8_t>(rng()); break;
      case 3: {  // an 8-byte integer set to an extreme value
        const uint64_t extremes[] = {0, 1, 0x7FFFFFFFFFFFFFFFULL, 0xFFFFFFFFFFFFFFFFULL, 1ULL << 32, 0x80000000ULL};
        const uint64_t v = extremes[rng() % 6];
        for (size_t k = 0; k < 8 && pos + k < m.size(); ++k) m[pos + k] = static_cast<uint8_t>(v >> (8 * k));
        break;
      }
      case 4: m.insert(m.begin() + static_cast<long>(pos), static_cast<uint8_t>(rng())); break;
      case 5: {  // duplicate a slice
        const size_t len = std::min<size_t>(m.size() - pos, 1 + rng() % 32);
        std::vector<uint8_t> slice(m.begin() + static_cast<long>(pos), m.begin() + static_cast<long>(pos + len));
        m.insert(m.begin() + static_cast<long>(rng() % m.size()), slice.begin(), slice.end());
        break;
      }
    }
  }
  return m;
}

// In a sanitizer build (CI's second run of this suite, after the optimized
// one) a quarter of the inputs, the first quarter of the same sequence: the
// sanitized run is for memory errors, and libFuzzer's phase then explores
// every parser with coverage and the same sanitizers (docs/fuzzing.md).
#ifdef HETRT_SANITIZED
constexpr int kShareOfInputs = 4;
#else
constexpr int kShareOfInputs = 1;
#endif

void FuzzFromSeeds(Target target, const std::vector<std::vector<uint8_t>>& seeds, int iterations) {
  iterations /= kShareOfInputs;
  std::mt19937_64 rng(12345);
  for (const auto& seed : seeds) target(seed.data(), seed.size());
  for (int i = 0; i < iterations; ++i) {
    const auto input = Mutate(seeds[static_cast<size_t>(i) % seeds.size()], rng);
    target(input.data(), input.size());
  }
}

std::vector<std::vector<uint8_t>> FixtureFiles(const std::string& extension, size_t max_bytes) {
  std::vector<std::vector<uint8_t>> files;
  const std::string root = testing::FixturesRoot() + "/tvm-0.18";
  if (!std::filesystem::is_directory(root)) return files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
    if (e.path().extension() != extension || e.file_size() > max_bytes) continue;
    auto bytes = ReadFileBytes(e.path().string());
    if (bytes.ok()) files.push_back(std::move(bytes).value());
  }
  return files;
}

TEST(ParserFuzz, ParamDict) {
  auto seeds = FixtureFiles(".params", 64 * 1024);
  Tensor t = Tensor::EmptyHost({2, 2}, {kDLFloat, 32, 1}).value();
  seeds.push_back(WriteParamDict({{"w", t}}).value());
  FuzzFromSeeds(&fuzz::ParamDict, seeds, 20000);
}

TEST(ParserFuzz, GraphJson) {
  auto seeds = FixtureFiles(".json", 8 * 1024);  // graph.json and meta.json of the small models
  seeds.push_back(std::vector<uint8_t>{'{', '}'});
  FuzzFromSeeds(&fuzz::GraphJson, seeds, 20000);
}

// Inputs libFuzzer found that once failed, kept so they never come back.
TEST(ParserFuzz, Regressions) {
  const std::string dir = std::string(HETRT_FUZZ_REGRESSIONS_DIR);
  int count = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    auto bytes = ReadFileBytes(e.path().string()).value();
    const std::string name = e.path().filename().string();
    if (name.rfind("npy_", 0) == 0) {
      fuzz::Npy(bytes.data(), bytes.size());
      EXPECT_FALSE(ReadNpy(bytes, name).ok()) << name;
    }
    if (name.rfind("rest_", 0) == 0) fuzz::RestInferRequest(bytes.data(), bytes.size());
    ++count;
  }
  EXPECT_GE(count, 1);
}

TEST(ParserFuzz, Npy) {
  auto seeds = FixtureFiles(".npy", 8 * 1024);
  if (seeds.empty()) HETRT_MISSING("fixtures", "no .npy fixtures under " << testing::FixturesRoot());
  FuzzFromSeeds(&fuzz::Npy, seeds, 20000);
}

TEST(ParserFuzz, ModuleBlob) {
  // Blob payloads: a factory + _lib + tree, legacy form, and a plugin key.
  std::vector<std::vector<uint8_t>> seeds;
  for (const char* model : {"add3", "reuse"}) {
    const std::string dir = testing::TvmFixture(model);
    if (dir.empty()) continue;
    auto graph = ReadFileBytes(dir + "/graph.json");
    if (!graph.ok()) continue;
    ByteWriter w;
    w.WriteU64(3);
    w.WriteString("GraphExecutorFactory");
    w.WriteString(std::string(graph->begin(), graph->end()));
    w.WriteU64(0);
    w.WriteU64(0);
    w.WriteString("default");
    w.WriteString("_lib");
    w.WriteString("_import_tree");
    for (uint64_t v : {3, 0, 1, 1, 1, 1}) w.WriteU64(v);
    seeds.push_back(w.Take());
  }
  ByteWriter legacy;
  legacy.WriteU64(3);
  legacy.WriteString("_lib");
  legacy.WriteString("metadata_module");
  legacy.WriteString("opencl");
  legacy.WriteU64(2);
  seeds.push_back(legacy.Take());
  FuzzFromSeeds(&fuzz::ModuleBlob, seeds, 50000);
}

TEST(ParserFuzz, RelaxExecutable) {
  // The executable images of the Relax fixtures (the blob entry's payload).
  std::vector<std::vector<uint8_t>> seeds;
  const std::filesystem::path root = std::filesystem::path(testing::FixturesRoot()) / "tvm-0.18-relax";
  for (const char* model : {"relax_dyn_batch", "relax_hetero_opencl"}) {
    LoadOptions options;
    options.keep_unloadable = true;
    auto tree = LoadModuleFile((root / model / "deploy.so").string(), options);
    if (!tree.ok()) continue;
    auto bytes = (*tree)->SaveToBinary();
    if (bytes.ok() && bytes->size() > 8) seeds.emplace_back(bytes->begin() + 8, bytes->end());
  }
  if (seeds.empty()) HETRT_MISSING("fixtures", "no Relax fixtures under " << root.string());
  FuzzFromSeeds(&fuzz::RelaxExecutable, seeds, 3000);
}

std::vector<std::vector<uint8_t>> SeedFiles(const std::string& folder) {
  std::vector<std::vector<uint8_t>> seeds;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(HETRT_FUZZ_SEEDS_DIR) + "/" + folder))
    seeds.push_back(ReadFileBytes(entry.path().string()).value());
  return seeds;
}

TEST(ParserFuzz, FfiModuleBlob) {
  auto seeds = SeedFiles("ffi_blob");
  ASSERT_FALSE(seeds.empty());
  FuzzFromSeeds(&fuzz::FfiModuleBlob, seeds, 20000);
}

TEST(ParserFuzz, DevicePayload) {
  auto seeds = SeedFiles("device_payload");
  ASSERT_FALSE(seeds.empty());
  FuzzFromSeeds(&fuzz::DevicePayload, seeds, 20000);
}

TEST(ParserFuzz, TensorCacheJson) {
  const auto seeds = SeedFiles("tensor_cache");  // tiny_llama's, and a small one with f32-to-bf16 records
  ASSERT_GE(seeds.size(), 2u);
  FuzzFromSeeds(&fuzz::TensorCacheJson, seeds, 20000);
}

TEST(ParserFuzz, MlfTar) {
  const std::string dir = testing::FixturesRoot() + "/tvm-0.18/mlf";
  std::vector<std::vector<uint8_t>> seeds;
  if (std::filesystem::exists(dir + "/add3_graph_mlf.tar"))
    seeds.push_back(ReadFileBytes(dir + "/add3_graph_mlf.tar").value());
  if (std::filesystem::exists(dir + "/add3_aot_mlf.tar"))
    seeds.push_back(ReadFileBytes(dir + "/add3_aot_mlf.tar").value());
  if (seeds.empty()) HETRT_MISSING("fixtures", "no MLF fixtures under " << testing::FixturesRoot());
  FuzzFromSeeds(&fuzz::MlfTar, seeds, 3000);
}

TEST(ParserFuzz, RestInferRequest) {
  const auto seeds = SeedFiles("rest");
  ASSERT_GE(seeds.size(), 4u);
  FuzzFromSeeds(&fuzz::RestInferRequest, seeds, 50000);
}

TEST(ParserFuzz, GrpcInferRequest) {
  const auto seeds = SeedFiles("grpc");
  ASSERT_GE(seeds.size(), 3u);
  FuzzFromSeeds(&fuzz::GrpcInferRequest, seeds, 50000);
}

TEST(ParserFuzz, GenerateRequestJson) {
  const auto seeds = SeedFiles("generate");
  ASSERT_GE(seeds.size(), 3u);
  FuzzFromSeeds(&fuzz::GenerateRequestJson, seeds, 30000);
}

TEST(ParserFuzz, GrpcGenerateRequest) {
  const auto seeds = SeedFiles("grpc_generate");
  ASSERT_GE(seeds.size(), 2u);
  FuzzFromSeeds(&fuzz::GrpcGenerateRequest, seeds, 30000);
}

TEST(ParserFuzz, HttpRequestHead) {
  const auto seeds = SeedFiles("http_head");
  ASSERT_GE(seeds.size(), 3u);
  FuzzFromSeeds(&fuzz::HttpRequestHead, seeds, 50000);
}

TEST(ParserFuzz, ElfSymbols) {
  std::vector<std::vector<uint8_t>> seeds;
  const std::string dir = testing::TvmFixture("add3");
  if (dir.empty()) HETRT_MISSING("fixtures", "no fixtures under " << testing::FixturesRoot());
  seeds.push_back(ReadFileBytes(dir + "/lib.so").value());
  FuzzFromSeeds(&fuzz::ElfSymbols, seeds, 20000);
}

}  // namespace
}  // namespace hetrt
