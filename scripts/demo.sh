#!/usr/bin/env bash
# README's first command: installs what is missing, builds, and runs the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh
hetrt=./build/bin/hetrt
echo; echo "== hetrt plugins"; $hetrt plugins
echo; echo "== hetrt demo: hetrt's own MLP and CNN placed across CPU + every device here"
$hetrt demo
fixtures=${HETRT_FIXTURES:-../shared/fixtures}/tvm-0.18
if [ -d "$fixtures" ]; then
  echo; echo "== hetrt inspect $fixtures/mlp/deploy.so"
  $hetrt inspect "$fixtures/mlp/deploy.so"
  for model in mlp resnet18 aot_cpp_mlp; do
    echo; echo "== hetrt run $fixtures/$model/deploy.so --inputs $fixtures/$model/inputs.params --repeat 20"
    $hetrt run "$fixtures/$model/deploy.so" --inputs "$fixtures/$model/inputs.params" --repeat 20
  done
  mlf=$fixtures/mlf
  echo; echo "== hetrt run $mlf/mlp_graph_mlf.tar --device micro (C runtime in a device program, framed protocol over a pipe)"
  $hetrt run "$mlf/mlp_graph_mlf.tar" --device micro --inputs "$mlf/mlp_inputs.params" --repeat 20
else
  echo "(TVM fixtures not found at $fixtures: set HETRT_FIXTURES to also run TVM-made models)"
fi
