#!/usr/bin/env bash
# Every test under AddressSanitizer + UndefinedBehaviorSanitizer with leak
# detection, in build-asan/ (no benchmarks). docs/sanitizers.md explains the
# options below.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHETRT_SANITIZE=address,undefined \
  -DHETRT_BUILD_BENCH=OFF >/dev/null
cmake --build build-asan -j "$jobs"
export ASAN_OPTIONS="use_sigaltstack=0:detect_leaks=1:strict_string_checks=1:fast_unwind_on_malloc=0 ${ASAN_OPTIONS:-}"
export LSAN_OPTIONS="suppressions=$PWD/tests/sanitizers/lsan.supp ${LSAN_OPTIONS:-}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1 ${UBSAN_OPTIONS:-}"
# The Vulkan suite is left out of this run for now (docs/sanitizers.md: lavapipe
# under the validation layer reports driver allocations as leaked, and with leak
# checks off the suite ran past 8 minutes under ASan): an open item.
ctest --test-dir build-asan --output-on-failure -j "$jobs" -E 'Vulkan'

