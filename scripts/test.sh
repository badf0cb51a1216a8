#!/usr/bin/env bash
# README's second command: installs what is missing, builds, runs every test,
# then the concurrent suites under TSan and every test under ASan + UBSan.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh
jobs=$(nproc 2>/dev/null || echo 2)
ctest --test-dir build --output-on-failure -j "$jobs"
./scripts/test_tsan.sh
./scripts/test_asan.sh
