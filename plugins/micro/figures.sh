#!/usr/bin/env bash
# The figures of docs/micro.md: per MLF model and board, the firmware's
# sections, the arena the board used against the MLF metadata's budget, and
# the instructions of one inference under QEMU -icount; then hetrt's own
# footprint without a model. Usage: plugins/micro/figures.sh [BUILD_DIR] [MLF_DIR]
set -euo pipefail
build=${1:-build}
mlf=${2:-../shared/fixtures/tvm-0.18/mlf}
hetrt=$build/bin/hetrt
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "| model | board | standalone .text / .data / .bss | host-driven .text / .data / .bss | arena used / metadata budget | instructions: init / one inference |"
echo "|---|---|---|---|---|---|"
for board in mps2-an386 mps2-an385 lm3s6965evb; do
  for tar in "$mlf"/*_mlf.tar; do
    name=$(basename "$tar" _mlf.tar)
    model=${name%_*}
    dir=$work/$name-$board
    if ! summary=$("$hetrt" micro project "$tar" -o "$dir" --board "$board" --inputs "$mlf/${model}_inputs.params" 2>&1); then
      echo "| $name | $board | refused: $(echo "$summary" | sed 's/^hetrt: error: //' | tr '\n' ' ' | sed 's/.*: model/model/') | | | |"
      continue
    fi
    sizes() { echo "$summary" | sed -n "s/^$1: .text \([0-9]*\), .data \([0-9]*\), .bss \([0-9]*\).*/\1 \/ \2 \/ \3/p"; }
    budget=$(echo "$summary" | sed -n 's/.*MLF metadata budget \([0-9]*\).*/\1/p')
    out=$("$hetrt" micro run-qemu "$dir")
    arena=$(echo "$out" | sed -n 's/^arena: \([0-9]*\) of.*/\1/p')
    insns=$(echo "$out" | sed -n 's/^instructions (QEMU -icount shift=8): init \([0-9]*\), run \([0-9]*\)/\1 \/ \2/p')
    echo "| $name | $board | $(sizes standalone.elf) | $(sizes host-driven.elf) | $arena / $budget | $insns |"
  done
done
echo
echo "hetrt without a model (mps2-an386, -O2): the C runtime and protocol server as objects, and the"
echo "host-driven firmware linked around a model with no tensors (arena 16 B, 32 KB stack in .bss):"
make -s -C "$work/add3_aot-mps2-an386" runtime-size
