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
has_target cuda_test && targets+=(cuda_test)
cmake --build build-tsan -j "$jobs" --target "${targets[@]}"
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 ${TSAN_OPTIONS:-}"
export HETRT_FIXTURES="${HETRT_FIXTURES:-$PWD/../shared/fixtures}"
for t in async_executor_test graph_executor_test cpu_plugin_test stress_test serve_test; do
  echo "tsan: $t"
  ./build-tsan/bin/$t --gtest_brief=1
done
# hetrt serve itself: REST's fast path (the instance thread writes responses
# the worker's connection then reads past), pipelining, slow readers, and the
# requests left to httplib.
echo "tsan: hetrt serve (rest_binary_test.py)"
TSAN_OPTIONS="$TSAN_OPTIONS suppressions=$PWD/tests/sanitizers/tsan.supp" \
  /usr/bin/python3 tests/serve/rest_binary_test.py build-tsan/bin/hetrt > build-tsan/rest_binary_test.log 2>&1 ||
  { tail -60 build-tsan/rest_binary_test.log; exit 1; }
# Language models served over REST: the schedulers, the relay sending tokens
# from them while handler threads poll, cancellation on hang-up, the drain.
# (Not the gRPC stream: Debian's gRPC is not built with TSan, and its callback
# API hands each reactor's tags between its threads through the completion
# queue, which TSan cannot see; serve_test drives the same schedulers in process.)
for llm_test in llm_serving_test; do
  echo "tsan: hetrt serve ($llm_test.py)"
  TSAN_OPTIONS="$TSAN_OPTIONS suppressions=$PWD/tests/sanitizers/tsan.supp" \
    /usr/bin/python3 tests/serve/$llm_test.py build-tsan/bin/hetrt > build-tsan/$llm_test.log 2>&1 ||
    { tail -80 build-tsan/$llm_test.log; exit 1; }
done
# The CPU's streams, events and current stream per thread are checked by the conformance kit.
profiles=sdk/conformance/profiles
echo "tsan: hetrt-conformance (cpu)"
./build-tsan/bin/hetrt-conformance build-tsan/lib/hetrt-plugins/libhetrt_plugin_cpu.so --profile $profiles/cpu.profile --gtest_brief=1

if has_target cuda_test; then
  export HETRT_CUDA_DRIVER="$PWD/build-tsan/test-fake-cuda/13.0/libcuda.so.1"
  echo "tsan: cuda_test, hetrt-conformance (cuda), stress_test (cuda) on the fake CUDA driver (its streams run on threads of their own)"
  ./build-tsan/bin/cuda_test --gtest_brief=1
  ./build-tsan/bin/hetrt-conformance build-tsan/lib/hetrt-plugins/libhetrt_plugin_cuda.so --profile $profiles/cuda.profile --gtest_brief=1
  ./build-tsan/bin/stress_test --gtest_brief=1 --gtest_filter='*Cuda*'
fi
