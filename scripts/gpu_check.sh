#!/usr/bin/env bash
# Runs on a GPU machine over the bundle of scripts/gpu_bundle.sh: the CUDA
# tests on the real driver, the conformance kit on the CUDA plugin, the CUDA fixtures
# through the CLI, and the CUDA benchmarks. Logs go to $OUT (or ./gpu-out).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-$PWD/gpu-out}
mkdir -p "$out"
repo=$PWD
[ -d .gpu/sysroot ] || tar -C .gpu -xJf .gpu/sysroot.tar.xz
# The binaries carry the paths of the machine that built them: give them those.
mkdir -p /work/main /work/shared
[ "$repo" = /work/main ] || ln -sfn "$repo/.gpu/build" /work/main/build
[ "$repo" != /work/main ] || ln -sfn .gpu/build build
ln -sfn "$repo/.gpu/fixtures" /work/shared/fixtures
# ... and the sources the tests compile model libraries from, with DLPack.
[ "$repo" = /work/main ] || for d in core tests sdk; do ln -sfn "$repo/$d" /work/main/$d; done
[ -f /usr/include/dlpack/dlpack.h ] || cp -r .gpu/include/dlpack /usr/include/
command -v cc || echo "no C compiler: the tests that export model libraries will fail"
# Tests start the CLI with an LD_LIBRARY_PATH of their own: the bundled
# libraries go to the loader's cache instead (searched after the image's own).
echo "$repo/.gpu/sysroot" > /etc/ld.so.conf.d/zz-hetrt-bundle.conf && ldconfig
export HETRT_FIXTURES=/work/shared/fixtures
bin=/work/main/build/bin
nvidia-smi -L | tee "$out/gpu.txt"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee -a "$out/gpu.txt"
status=0
# A step piped into tee runs in a subshell: failures are marked in a file.
rm -f "$out/failed"
step() { echo "== $1"; shift; "$@" || { echo "== FAILED ($?): $*"; echo "$*" >> "$out/failed"; }; }
step plugins "$bin/hetrt" plugins 2>&1 | tee "$out/plugins.txt"
step cuda_test timeout 300 "$bin/cuda_test" --gtest_filter='-CudaPersonality.*:FakeCudaDriver.*:CudaFakeDriver.*:CudaNoDevice.*' \
  > "$out/cuda_test.log" 2>&1
tail -5 "$out/cuda_test.log"; grep -E '^\[  (FAILED|SKIPPED) ' "$out/cuda_test.log" | head -20
step conformance timeout 120 "$bin/hetrt-conformance" /work/main/build/lib/hetrt-plugins/libhetrt_plugin_cuda.so \
  --profile /work/main/sdk/conformance/profiles/cuda.profile > "$out/conformance.log" 2>&1
tail -3 "$out/conformance.log"
# The fixtures hold sm_80 cubins only: on another GPU the load fails with
# "no code for this GPU", which is a skip (cuda_test says the same), not a failure.
for m in mlp_cuda hetero_cuda_seed; do
  d=/work/shared/fixtures/tvm-0.18/$m
  "$bin/hetrt" run "$d/deploy.so" --inputs "$d/inputs.params" --device cpu --device cuda --repeat 200 \
    --save-outputs "/tmp/$m.out.params" > "/tmp/run_$m.txt" 2>&1
  rc=$?
  { echo "== run $m (rc $rc)"; tail -3 "/tmp/run_$m.txt"; } | tee -a "$out/fixtures.txt"
  if [ $rc -ne 0 ] && ! grep -q "no code for this GPU" "/tmp/run_$m.txt"; then
    echo "== FAILED ($rc): run $m"; echo "run $m" >> "$out/failed"
  fi
done
# The two-branch model (CPU branch + CUDA branch) per node and per instruction:
# the graph executor asynchronous and sequential, and the Relax VM, in one
# file (the device tool brings back eight files at most).
tb=.gpu/models/two_branch_cuda
step "bench graph" "$bin/hetrt" bench $tb/graph.so --inputs $tb/inputs.params --device cpu --device cuda \
  --repeat 500 --warmup 20 --trace "/tmp/two_branch_graph.trace.json" > "/tmp/two_branch_graph.txt" 2>&1
step "bench graph sequential" "$bin/hetrt" bench $tb/graph.so --inputs $tb/inputs.params --device cpu --device cuda \
  --repeat 500 --warmup 20 --sequential --trace "/tmp/two_branch_graph_seq.trace.json" > "/tmp/two_branch_graph_seq.txt" 2>&1
step "bench relax" "$bin/hetrt" bench $tb/relax.so --inputs $tb/inputs.params --device cuda --device cpu \
  --repeat 500 --warmup 20 --trace "/tmp/two_branch_relax.trace.json" > "/tmp/two_branch_relax.txt" 2>&1
for f in graph graph_seq relax; do { echo "== two_branch $f"; cat "/tmp/two_branch_$f.txt"; } >> "$out/two_branch.txt"; done
tail -n 4 /tmp/two_branch_*.txt
step cuda_bench timeout 180 "$bin/cuda_bench" --benchmark_min_time=0.2 --benchmark_repetitions=3 \
  --benchmark_report_aggregates_only=true > "$out/cuda_bench.txt" 2>&1
grep -E 'median|mean' "$out/cuda_bench.txt" | head -40
[ ! -s "$out/failed" ] || status=1
echo "== status $status"
exit $status
