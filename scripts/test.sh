#!/usr/bin/env bash
# README's second command: installs what is missing, builds, runs every test,
# then the concurrent suites under TSan and every test under ASan + UBSan.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh
jobs=$(nproc 2>/dev/null || echo 2)
# In CI a missing device, tool or data set fails the test that needs it
# (tests/test_support.h: HETRT_REQUIRE); only "no GPU" may skip.
if [ "${CI:-}" = "true" ]; then export HETRT_REQUIRE="${HETRT_REQUIRE:-all}"; fi
status=0
ctest --test-dir build --output-on-failure -j "$jobs" || status=$?
python3 scripts/skipped_tests.py build
[ "$status" -eq 0 ] || exit "$status"
./scripts/test_tsan.sh
./scripts/test_asan.sh
