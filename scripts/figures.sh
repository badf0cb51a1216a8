#!/usr/bin/env bash
# The producer of every figure in README.md and docs/: builds the benchmarks
# (the bench/ targets, the CLI, the plugins, the Python package), runs them,
# and writes docs/figures.md (machine, date, commit, each command with its raw
# result, ratios taken within one run) and the generated blocks of README.md
# and docs/micro.md, through scripts/figures_report.py.
#
#   scripts/figures.sh                        the full run (Google Benchmark's default minimum time;
#                                             serving 2 s x 3 repetitions, medians; h2load 2 s x 3 alternating rounds)
#   FIGURES_MIN_TIME=0.05 scripts/figures.sh  quick mode: checks the script end to end; noisy numbers
#
# Environment:
#   FIGURES_MIN_TIME=S     quick mode, every benchmark for about S seconds
#   TVM_RUNTIME=PATH       a libtvm_runtime.so for a side-by-side run; hetrt has no TVM comparison
#                          benchmark yet, so this is reported as unsupported and no TVM figure appears
#   FIGURES_BUILD_DIR=DIR  build folder (default build; configured as Release when new)
#   FIGURES_OUT=FILE       default docs/figures.md; only then are README.md's and docs/micro.md's
#                          generated blocks rewritten too
#   FIGURES_SKIP=a,b       sections not to run: cpu,relax,llm,async,devices,demo,export,micro,serving,cuda
#                          (serving includes bench/serve_load.py against the protocol floor)
#                          (their figures then read "not measured")
#   FIGURES_JOBS=N         build parallelism (default: nproc)
#   HETRT_FIXTURES=DIR     the TVM fixtures (default: the build's HETRT_FIXTURES_DIR)
# Exits 1 when a figure could not be measured, naming each (unless it was skipped on purpose).
set -euo pipefail
cd "$(dirname "$0")/.."

build=${FIGURES_BUILD_DIR:-build}
out=${FIGURES_OUT:-docs/figures.md}
raw=$build/figures
skip=",${FIGURES_SKIP:-},"
min_time=${FIGURES_MIN_TIME:-}
unset HETRT_CUDA_DRIVER  # a fake driver makes no figure

say() { echo "figures: $*" >&2; }

if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cache() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt" | head -1; }
build_type=$(cache CMAKE_BUILD_TYPE)
if [ "$build_type" != Release ]; then
  say "$build is a '${build_type:-no type}' build; figures need Release (FIGURES_BUILD_DIR=another folder)"
  exit 1
fi
# scripts/test.sh configures build/ without the benchmarks (CI compiles them
# in its ASan tree): turn them back on.
if [ "$(cache HETRT_BUILD_BENCH)" = OFF ]; then
  say "$build was configured without benchmarks (scripts/test.sh does): configuring it with them"
  cmake -S . -B "$build" -DHETRT_BUILD_BENCH=ON >/dev/null
fi
python=$(cache _Python3_EXECUTABLE)
python=${python:-/usr/bin/python3}
HETRT_FIXTURES=$(realpath -m "${HETRT_FIXTURES:-$(cache HETRT_FIXTURES_DIR)}")
export HETRT_FIXTURES
fixtures=$HETRT_FIXTURES/tvm-0.18

# The benchmarks bench/ defines (cuda_bench only where the CUDA plugin builds),
# and what they run: the CLI, the plugins, the Python package.
known=$(cmake --build "$build" --target help | sed -n 's/^\([A-Za-z0-9_]*\): .*/\1/p')
benches=$(sed -n 's/^ *add_executable(\([a-z_]*\).*/\1/p' bench/CMakeLists.txt)
targets=()
for t in $benches hetrt hetrt_plugin_cpu hetrt_plugin_opencl hetrt_plugin_vulkan hetrt_plugin_micro \
  hetrt_plugin_cuda hetrt_python hetrt_python_files; do
  if grep -qx "$t" <<<"$known"; then targets+=("$t"); fi
done
say "building ${targets[*]}"
cmake --build "$build" -j "${FIGURES_JOBS:-$(nproc)}" --target "${targets[@]}" >/dev/null

rm -rf "$raw"
mkdir -p "$raw"
if [ -n "$min_time" ]; then
  mode="quick (FIGURES_MIN_TIME=$min_time): checks that the script works end to end;"
  mode+=" the numbers are noise, do not quote them"
  gbench_time=(--benchmark_min_time="$min_time")
  serve_time=("${gbench_time[@]}")
  python_time=$min_time
  pipe_runs=100
  load_seconds=1
  load_concurrency=1,16
  load_rounds=3
else
  mode="full (Google Benchmark's default minimum time, or the bench's own; serving 2 s x 3 repetitions, medians; h2load 2 s x 3 alternating rounds)"
  gbench_time=()
  serve_time=(--benchmark_min_time=2 --benchmark_repetitions=3 --benchmark_report_aggregates_only=true)
  python_time=2
  pipe_runs=2000
  load_seconds=2
  load_concurrency=1,4,16,64
  load_rounds=3
fi
"$python" scripts/figures_report.py machine --build "$build" --mode "$mode" >"$raw/machine.json"

record() {  # record NAME REASON: NAME did not run, and why
  echo "$2" >"$raw/$1.skipped"
  say "$1 not run: $2"
}

# run NAME OUTPUT_SUFFIX [VAR=VALUE ...] COMMAND...: runs it, its output in NAME.OUTPUT_SUFFIX
# (.json when it writes JSON itself: then stdout goes to NAME.log), the command line in NAME.cmd.
run() {
  local name=$1 suffix=$2
  shift 2
  local line
  printf -v line '%q ' "$@"  # quoted: the line pastes into a shell as it ran ("a|b" stays one argument)
  line=${line% }
  line=${line//$HETRT_FIXTURES/\$HETRT_FIXTURES}
  echo "$line" >"$raw/$name.cmd"
  say "$name: $line"
  local stdout=$raw/$name.$suffix
  [ "$suffix" = json ] && stdout=$raw/$name.log
  env "$@" >"$stdout" 2>"$raw/$name.err" ||
    say "$name failed (exit status $?): $(tail -3 "$raw/$name.err" | tr '\n' ' ')"
}

gbench() {  # gbench NAME [VAR=VALUE ...] BINARY [ARGS...]
  local name=$1
  shift
  run "$name" json "$@" --benchmark_out="$raw/$name.json" --benchmark_out_format=json
}

has() { [ -x "$build/bin/$1" ]; }

skipped() {  # skipped SECTION RAW_NAME...: true (and each recorded) when FIGURES_SKIP names SECTION
  [[ $skip == *",$1,"* ]] || return 1
  local name
  shift
  for name in "$@"; do record "$name" "skipped (FIGURES_SKIP=${FIGURES_SKIP})"; done
}

if ! skipped cpu graph_bench launch_bench python_bench; then
  gbench graph_bench "$build/bin/graph_bench" "${gbench_time[@]}"
  gbench launch_bench "$build/bin/launch_bench" "${gbench_time[@]}"
  if why=$(PYTHONPATH=$build/python "$python" -c 'import numpy, hetrt' 2>&1); then
    run python_bench json PYTHONPATH="$build/python" "$python" bench/python_bench.py --min-time "$python_time" \
      --out "$raw/python_bench.json"
  else
    record python_bench "the Python package or numpy cannot be imported: $(tail -1 <<<"$why")"
  fi
fi
skipped relax relax_bench || gbench relax_bench "$build/bin/relax_bench" "${gbench_time[@]}"
skipped llm llm_bench || gbench llm_bench "$build/bin/llm_bench" "${gbench_time[@]}"
if ! skipped llm llm_serve_load token_stream_floor; then
  # hetrt serve streaming tiny_llama under load against the engine in process
  # (bench/llm_serve_load.py), and one token event's floor on loopback.
  run llm_serve_load json PYTHONPATH="$build/python" "$python" bench/llm_serve_load.py --hetrt "$build/bin/hetrt" \
    --rounds "$load_rounds" --json "$raw/llm_serve_load.json"
  gbench token_stream_floor "$build/bin/token_stream_floor" "${gbench_time[@]}"
fi
if ! skipped async async_bench async_bench_one_thread_each; then
  gbench async_bench "$build/bin/async_bench" "${gbench_time[@]}"
  gbench async_bench_one_thread_each POCL_MAX_PTHREAD_COUNT=1 HETRT_NUM_THREADS=1 "$build/bin/async_bench" \
    --benchmark_filter=TwoBranch "${gbench_time[@]}"
fi
skipped devices device_bench || gbench device_bench "$build/bin/device_bench" "${gbench_time[@]}"
skipped demo demo || run demo txt "$build/bin/hetrt" demo
skipped export export_bench || gbench export_bench "$build/bin/export_bench" "${gbench_time[@]}"
if ! skipped micro micro_table micro_pipe; then
  if command -v qemu-system-arm >/dev/null && command -v arm-none-eabi-gcc >/dev/null; then
    run micro_table txt plugins/micro/figures.sh "$build" "$fixtures/mlf"
  else
    record micro_table "qemu-system-arm or arm-none-eabi-gcc is not installed (scripts/setup.sh installs both)"
  fi
  run micro_pipe txt "$build/bin/hetrt" run "$fixtures/mlf/mlp_aot_mlf.tar" --device micro \
    --inputs "$fixtures/mlf/mlp_inputs.params" --repeat "$pipe_runs"
fi
if ! skipped serving serve_bench serve_bench_pinned_devices serve_bench_pinned_devices_batch; then
  gbench serve_bench "$build/bin/serve_bench" --benchmark_filter=-two_stage "${serve_time[@]}"
  # Instances overlapping devices, with each device on a core of its own so that
  # one instance and two have the same hardware: the process (CPU stages, one
  # thread per executor; gRPC; clients) on the last core, PoCL's one worker
  # pinned to core 0 (POCL_AFFINITY pins worker i to core i). Once with the
  # default scheduling, once with SCHED_BATCH (chrt -b 0: no wakeup preemption,
  # so two requests' CPU stages on one core run one after the other instead of
  # time-sliced side by side).
  pinned=(HETRT_NUM_THREADS=1 POCL_MAX_PTHREAD_COUNT=1 POCL_AFFINITY=1)
  last_core=$(($(nproc) - 1))
  gbench serve_bench_pinned_devices "${pinned[@]}" taskset -c "$last_core" "$build/bin/serve_bench" \
    --benchmark_filter='two_stage|hetero' "${serve_time[@]}"
  gbench serve_bench_pinned_devices_batch "${pinned[@]}" chrt -b 0 taskset -c "$last_core" "$build/bin/serve_bench" \
    --benchmark_filter='two_stage' "${serve_time[@]}"
fi
floor_runs=(serve_load serve_load_small_relu serve_load_large_relu)
if skipped serving "${floor_runs[@]}"; then
  :
elif ! command -v h2load >/dev/null || ! command -v protoc >/dev/null; then
  for name in "${floor_runs[@]}"; do record "$name" "h2load or protoc is not installed (scripts/setup.sh installs both)"; done
else
  # hetrt serve beside the protocol floor under h2load (bench/serve_load.py);
  # small_relu and large_relu are written by make_bench_model into the raw folder.
  floor=(--hetrt "$build/bin/hetrt" --floor "$build/bin/protocol_floor_server" --seconds "${load_seconds}"
    --rounds "$load_rounds")
  run serve_load json "$python" bench/serve_load.py "${floor[@]}" --model mlp --concurrency "$load_concurrency" \
    --json "$raw/serve_load.json"
  for model in small_relu large_relu; do
    "$build/bin/make_bench_model" "$model" "$raw/$model" >/dev/null
    concurrency=$load_concurrency
    [ "$model" = large_relu ] && concurrency=1,4
    run "serve_load_$model" json "$python" bench/serve_load.py "${floor[@]}" --model "$model" \
      --model-dir "$raw/$model" --concurrency "$concurrency" --protocols grpc,rest-binary \
      --json "$raw/serve_load_$model.json"
  done
fi
if skipped cuda cuda_bench; then
  :
elif ! has cuda_bench; then
  record cuda_bench "no cuda_bench in this build (benchmarks not built)"
elif ! gpus=$(nvidia-smi -L 2>/dev/null) || [ -z "$gpus" ]; then
  record cuda_bench "no GPU (nvidia-smi lists none); CUDA figures need one"
else
  gbench cuda_bench "$build/bin/cuda_bench" "${gbench_time[@]}"
fi
if [ -n "${TVM_RUNTIME:-}" ]; then
  record tvm "TVM_RUNTIME=$TVM_RUNTIME is set, but hetrt has no TVM comparison benchmark yet (unsupported): no TVM figures"
else
  record tvm "TVM_RUNTIME is unset: no TVM comparison in this run"
fi

options=()
[ "$skip" = ",," ] || options+=(--allow-missing)
[ "$out" != docs/figures.md ] || options+=(--update README.md --update docs/micro.md)
status=0
"$python" scripts/figures_report.py render --raw "$raw" --out "$out" "${options[@]}" || status=$?
say "wrote $out (raw results and each command's output in $raw)"
exit $status
