#!/usr/bin/env bash
# README's second command: installs what is missing, builds, runs the tests of
# the optimized build, then the concurrent suites under TSan, every test under
# ASan + UBSan, a short coverage-guided fuzz of every parser, and the container
# test when the image's files changed. Each phase prints its duration.
set -euo pipefail
cd "$(dirname "$0")/.."
phase() {  # phase NAME COMMAND...: runs it, then says how long it took
  local name=$1 start=$SECONDS
  shift
  "$@"
  echo "== $name: $((SECONDS - start)) s (total $((SECONDS / 60)) m $((SECONDS % 60)) s)"
}
phase setup ./scripts/setup.sh
# The optimized tree builds what users run and the tests that drive it (CLI,
# Python, serving, install, SDK) with the few GoogleTest suites only an
# uninstrumented build can show; every suite runs in the ASan + UBSan phase,
# whose tree also compiles the benchmarks (they run no test).
phase build ./scripts/build.sh -DHETRT_TEST_SUITES=uninstrumented -DHETRT_BUILD_BENCH=OFF
jobs=$(nproc 2>/dev/null || echo 2)
# In CI a missing device, tool or data set fails the test that needs it
# (tests/test_support.h: HETRT_REQUIRE); only "no GPU" may skip.
if [ "${CI:-}" = "true" ]; then export HETRT_REQUIRE="${HETRT_REQUIRE:-all}"; fi
status=0
start=$SECONDS
ctest --test-dir build --output-on-failure -j "$jobs" --output-junit ctest-junit.xml || status=$?
echo "== tests: $((SECONDS - start)) s"
python3 scripts/skipped_tests.py build/ctest-junit.xml
[ "$status" -eq 0 ] || exit "$status"
phase tsan ./scripts/test_tsan.sh
phase asan ./scripts/test_asan.sh
# Every parser for 10 s: a crash, leak, timeout or out-of-memory fails the run.
# The harnesses come from the ASan phase's build (clang, ASan + UBSan + coverage).
phase fuzz env HETRT_FUZZ_BUILD=build-asan ./scripts/fuzz.sh "${HETRT_FUZZ_SECONDS:-10}"
# The container image, built and run as its KServe pod would, when deploy/,
# serve/ or scripts/setup.sh changed since its last pass (docs/serving.md).
phase container ./scripts/test_container.sh --if-changed
