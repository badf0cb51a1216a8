// Export benchmarks: emitting and compiling the devc.c of a large blob (TVM
// users saw minutes here for multi-megabyte blobs written as integer lists).
#include <benchmark/benchmark.h>

#include <filesystem>
#include <random>

#include "hetrt/sdk/byte_stream.h"
#include "hetrt/module_export.h"

namespace hetrt {
namespace {

std::vector<uint8_t> RandomBlob(size_t bytes) {
  std::vector<uint8_t> blob(bytes);
  std::mt19937_64 rng(7);
  for (size_t i = 0; i + 8 <= bytes; i += 8) {
    const uint64_t v = rng();
    std::memcpy(blob.data() + i, &v, 8);
  }
  return blob;
}

void BM_EmitDevcC(benchmark::State& state) {
  const auto blob = RandomBlob(static_cast<size_t>(state.range(0)) << 20);
  for (auto _ : state) benchmark::DoNotOptimize(EmitDevcC(blob));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(blob.size()));
}
BENCHMARK(BM_EmitDevcC)->Arg(50)->Unit(benchmark::kMillisecond);

// Emit + compile + link a blob-only shared library with cc (-O2).
void BM_CompileDevcC(benchmark::State& state) {
  const auto blob = RandomBlob(static_cast<size_t>(state.range(0)) << 20);
  const auto dir = std::filesystem::temp_directory_path() / "hetrt-bench-devc";
  std::filesystem::create_directories(dir);
  for (auto _ : state) {
    const std::string source = EmitDevcC(blob);
    (void)WriteFileBytes((dir / "devc.c").string(), {reinterpret_cast<const uint8_t*>(source.data()), source.size()});
    Status s = LinkSharedLibrary({(dir / "devc.c").string()}, (dir / "blob.so").string(), {});
    if (!s.ok()) return state.SkipWithError(s.message().c_str());
  }
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_CompileDevcC)->Arg(1)->Arg(50)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

}  // namespace
}  // namespace hetrt

BENCHMARK_MAIN();
