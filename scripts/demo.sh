#!/usr/bin/env bash
# README's first command: installs what is missing, builds, and runs the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh
hetrt=./build/bin/hetrt
echo; echo "== hetrt plugins"; $hetrt plugins
fixtures=${HETRT_FIXTURES:-../shared/fixtures}/tvm-0.18
if [ -d "$fixtures" ]; then
  for model in mlp hetero_opencl_seed; do
    echo; echo "== hetrt inspect $fixtures/$model/deploy.so"
    $hetrt inspect "$fixtures/$model/deploy.so"
  done
else
  echo "(TVM fixtures not found at $fixtures: set HETRT_FIXTURES to run the TVM models)"
fi
