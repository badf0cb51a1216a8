#!/usr/bin/env bash
# Every test under AddressSanitizer + UndefinedBehaviorSanitizer with leak
# detection, in build-asan/. docs/sanitizers.md explains the
# options below. Built with clang: it compiles this instrumentation in half
# the time GCC 12 takes at -O1, and CI's ASan phase is mostly that build. The
# same build, with libFuzzer's coverage (fuzzer-no-link) in the libraries the
# harnesses reach (HETRT_FUZZ_COVERAGE), makes the fuzzing harnesses that
# scripts/test.sh then runs (HETRT_FUZZ_BUILD=build-asan), and CI's only build
# of the benchmarks (at -O0: it checks that they compile; the optimized tree
# skips them, and a plain scripts/build.sh builds them optimized).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build-asan -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1" -DHETRT_SANITIZE=address,undefined \
  -DCMAKE_C_FLAGS= -DCMAKE_CXX_FLAGS= -DHETRT_FUZZ_COVERAGE=ON -DHETRT_BUILD_FUZZERS=ON \
  -DHETRT_BUILD_BENCH=ON >/dev/null
cmake --build build-asan -j "$jobs"
export ASAN_OPTIONS="use_sigaltstack=0:detect_leaks=1:strict_string_checks=1:allocator_may_return_null=1 ${ASAN_OPTIONS:-}"
export LSAN_OPTIONS="suppressions=$PWD/tests/sanitizers/lsan.supp:use_tls=0 ${LSAN_OPTIONS:-}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1 ${UBSAN_OPTIONS:-}"
# Sanitizer builds run Vulkan without its validation layer (tests/CMakeLists.txt says why).
if [ -n "${HETRT_REQUIRE:-}" ]; then export HETRT_REQUIRE="$HETRT_REQUIRE,-vulkan-validation"; fi
# One test more than cores: a sixth of the suites' time is spent waiting (QEMU,
# sockets, retry timeouts); 773 tests took 290 s at -j2, 256 s at -j3.
ctest --test-dir build-asan --output-on-failure -j "$((jobs + 1))" --timeout 600
