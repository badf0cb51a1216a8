#!/usr/bin/env bash
# The concurrent suites under ThreadSanitizer: the asynchronous executor (CPU +
# OpenCL streams, two executors on two threads), the graph executor's
# multi-threaded tests, the CPU plugin's thread pool and the serving core
# (request queue, dynamic batching, instances, drain). Only what they need is
# built, in build-tsan/.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1" -DHETRT_SANITIZE=thread \
  -DHETRT_BUILD_BENCH=OFF >/dev/null
targets=(async_executor_test graph_executor_test cpu_plugin_test stress_test hetrt-conformance serve_test hetrt hetrt_plugin_cpu)
known=$(ninja -C build-tsan -t targets all 2>/dev/null | sed 's/:.*//')
has_target() { grep -qx "$1" <<<"$known"; }
# The suites above run fixtures on every plugin built here.
for plugin in hetrt_plugin_opencl hetrt_plugin_vulkan; do
  if has_target $plugin; then targets+=($plugin); fi
done
# CUDA on the fake driver, whose streams run on threads of their own: the
# conformance kit's stream and event checks and the stress test's CUDA cases
# drive the plugin's concurrent paths (cuda_test, its single-threaded suite,
# runs under ASan: under TSan it took 40 s and 54 s of compiling).
has_target hetrt_plugin_cuda && targets+=(hetrt_plugin_cuda hetrt_fake_cuda)
cmake --build build-tsan -j "$jobs" --target "${targets[@]}"
# TSan sleeps a second in every exiting process by default (atexit_sleep_ms),
# for threads still running to report: these programs join theirs first, and
# the suites start the CLI a hundred times (graph_executor_test: 45 s of which
# 12 s on a CPU).
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 atexit_sleep_ms=50 ${TSAN_OPTIONS:-}"
export HETRT_FIXTURES="${HETRT_FIXTURES:-$PWD/../shared/fixtures}"
supp="suppressions=$PWD/tests/sanitizers/tsan.supp"
fake_cuda="$PWD/build-tsan/test-fake-cuda/13.0/libcuda.so.1"
profiles=sdk/conformance/profiles

# Each run is a process of its own: they go $jobs at a time, each into its own
# log, whose end is printed when it fails (the phase then fails, after the others).
logs=build-tsan/logs
rm -rf $logs && mkdir -p $logs
start_run() {  # start_run NAME COMMAND...
  local name=$1
  shift
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  (
    begin=$SECONDS
    if "$@" >"$logs/$name.log" 2>&1; then
      echo "tsan: $name: passed ($((SECONDS - begin)) s)"
    else
      echo "tsan: $name: FAILED ($((SECONDS - begin)) s)"
      touch "$logs/$name.failed"
    fi
  ) &
}

# hetrt serve itself: REST's fast path (the instance thread writes responses
# the worker's connection then reads past), pipelining, slow readers, and the
# requests left to httplib.
start_run serve_rest_binary env TSAN_OPTIONS="$TSAN_OPTIONS $supp" \
  /usr/bin/python3 tests/serve/rest_binary_test.py build-tsan/bin/hetrt
# Language models served over REST: the schedulers, the relay sending tokens
# from them while handler threads poll, cancellation on hang-up, the drain.
# (Not the gRPC stream: Debian's gRPC is not built with TSan, and its callback
# API hands each reactor's tags between its threads through the completion
# queue, which TSan cannot see; serve_test drives the same schedulers in process.)
start_run serve_llm env TSAN_OPTIONS="$TSAN_OPTIONS $supp" \
  /usr/bin/python3 tests/serve/llm_serving_test.py build-tsan/bin/hetrt
for t in graph_executor_test async_executor_test stress_test serve_test cpu_plugin_test; do
  start_run $t ./build-tsan/bin/$t --gtest_brief=1
done
# The CPU's streams, events and current stream per thread are checked by the conformance kit.
start_run conformance_cpu ./build-tsan/bin/hetrt-conformance build-tsan/lib/hetrt-plugins/libhetrt_plugin_cpu.so \
  --profile $profiles/cpu.profile --gtest_brief=1
if has_target hetrt_plugin_cuda; then
  start_run conformance_cuda env HETRT_CUDA_DRIVER="$fake_cuda" ./build-tsan/bin/hetrt-conformance \
    build-tsan/lib/hetrt-plugins/libhetrt_plugin_cuda.so --profile $profiles/cuda.profile --gtest_brief=1
  start_run stress_test_cuda env HETRT_CUDA_DRIVER="$fake_cuda" ./build-tsan/bin/stress_test --gtest_brief=1 \
    --gtest_filter='*Cuda*'
fi
wait
failed=0
for marker in "$logs"/*.failed; do
  [ -e "$marker" ] || continue
  name=$(basename "$marker" .failed)
  echo "== tsan: $name failed; its log ($logs/$name.log):"
  tail -n 300 "$logs/$name.log"
  failed=1
done
exit $failed
