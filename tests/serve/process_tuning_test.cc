#include "hetrt/serve/process_tuning.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdlib>
#include <cstring>

#include "hetrt/base/tensor.h"

namespace hetrt::serve {
namespace {

// A sanitizer's allocator is its own (it maps large blocks each time and
// ignores mallopt): the test exists in plain builds only. GCC says so with
// __SANITIZE_*__, clang with __has_feature.
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define HETRT_SANITIZED_ALLOCATOR 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HETRT_SANITIZED_ALLOCATOR 1
#endif
#ifndef HETRT_SANITIZED_ALLOCATOR

long MinorFaults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

// A request's tensor: allocated, written, freed.
void OneRequestsTensor(int64_t bytes) {
  Tensor t = Tensor::EmptyHost({bytes}, {kDLUInt, 8, 1}).value();
  std::memset(t.data(), 1, static_cast<size_t>(bytes));
}

// The next request's tensor of the same size is the memory the last one
// freed: it touches no fresh page (glibc's default maps the first anew and
// returns it at free, then takes the second from fresh heap pages).
TEST(ProcessTuning, ALargeTensorFreedIsReusedByTheNextWithoutPageFaults) {
  unsetenv("GLIBC_TUNABLES");  // malloc options of the user's would leave malloc alone
  KeepLargeBuffersForThisProcess();
  constexpr int64_t kBytes = 6 << 20;  // 1536 pages
  OneRequestsTensor(kBytes);
  const long before = MinorFaults();
  OneRequestsTensor(kBytes);
  EXPECT_LT(MinorFaults() - before, 64) << "a 6 MiB tensor allocated after one was freed faulted its pages in again";
}
#endif

}  // namespace
}  // namespace hetrt::serve
