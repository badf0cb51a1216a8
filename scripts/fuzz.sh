#!/usr/bin/env bash
# Coverage-guided fuzzing of every parser (docs/fuzzing.md): builds the
# libFuzzer harnesses with clang + ASan/UBSan in build-fuzz/, seeds a corpus per
# target from the TVM fixtures, and runs each target for SECONDS (default 600).
# HETRT_FUZZ_BUILD=DIR runs the harnesses a build made already instead (the
# test command's ASan build, made with fuzzer-no-link for this).
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(ParamDict ModuleBlob GraphJson Npy ElfSymbols MlfTar RestInferRequest GrpcInferRequest HttpRequestHead
  RelaxExecutable FfiModuleBlob DevicePayload TensorCacheJson GenerateRequestJson GrpcGenerateRequest)
fixtures=${HETRT_FIXTURES:-$PWD/../shared/fixtures}/tvm-0.18
build=${HETRT_FUZZ_BUILD:-build-fuzz}
if [ -z "${HETRT_FUZZ_BUILD:-}" ]; then
  san="-fsanitize=address,undefined"
  cmake -S . -B build-fuzz -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DHETRT_BUILD_FUZZERS=ON -DHETRT_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS=$san,fuzzer-no-link" "-DCMAKE_C_FLAGS=$san,fuzzer-no-link" \
    "-DCMAKE_SHARED_LINKER_FLAGS=$san" "-DCMAKE_EXE_LINKER_FLAGS=$san" >/dev/null
fi
cmake --build "$build" --target "${targets[@]/#/fuzz_}"

seed() {  # seed TARGET FILE...
  mkdir -p "build-fuzz/corpus/$1"
  shift_target=$1
  shift
  for f in "$@"; do [ -f "$f" ] && cp "$f" "build-fuzz/corpus/$shift_target/$(echo "$f" | tr '/' '_')"; done
  return 0
}
seed GraphJson "$fixtures"/*/graph.json
seed ParamDict "$fixtures"/*/*.params "$fixtures"/mlf/*.params
seed Npy "$fixtures"/*/*.npy
seed ElfSymbols "$fixtures"/*/lib.so
seed MlfTar "$fixtures"/mlf/*.tar
seed RestInferRequest tests/fuzz/seeds/rest/*
seed GrpcInferRequest tests/fuzz/seeds/grpc/*
seed HttpRequestHead tests/fuzz/seeds/http_head/*
seed FfiModuleBlob tests/fuzz/seeds/ffi_blob/*
seed DevicePayload tests/fuzz/seeds/device_payload/*
seed TensorCacheJson tests/fuzz/seeds/tensor_cache/*
seed GenerateRequestJson tests/fuzz/seeds/generate/*
seed GrpcGenerateRequest tests/fuzz/seeds/grpc_generate/*
mkdir -p build-fuzz/corpus/ModuleBlob
for info in "$fixtures"/*/blob.txt; do  # "deploy.so: __tvm_dev_mblob at file offset 0x4502, ... payload nbytes 2592"
  read -r offset nbytes < <(sed -n '1s/.*file offset \(0x[0-9a-f]*\).*payload nbytes \([0-9]*\).*/\1 \2/p' "$info")
  [ -n "${nbytes:-}" ] || continue
  dd if="$(dirname "$info")/deploy.so" of="build-fuzz/corpus/ModuleBlob/$(basename "$(dirname "$info")")" \
    iflag=skip_bytes,count_bytes bs=1M skip=$((offset + 8)) count="$nbytes" status=none  # bs=1 took a minute on a 45 MiB blob
done

# Relax executables: the image after the "relax.Executable" key in each deploy.so's blob.
mkdir -p build-fuzz/corpus/RelaxExecutable
for so in "$fixtures"-relax/*/deploy.so; do
  [ -f "$so" ] || continue
  python3 - "$so" "build-fuzz/corpus/RelaxExecutable/$(basename "$(dirname "$so")")" <<'PY'
import struct, sys
data = open(sys.argv[1], "rb").read()
key = b"relax.Executable"
at = data.find(struct.pack("<Q", len(key)) + key) + 8 + len(key)
n = struct.unpack_from("<Q", data, at)[0]
open(sys.argv[2], "wb").write(data[at + 8:at + 8 + n])
PY
done

mkdir -p build-fuzz/logs build-fuzz/crashes
# One target per core at a time (FUZZ_JOBS overrides); each writes its own log
# and, when it fails, its exit status to build-fuzz/logs/<target>.failed.
jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
fuzz_one() {
  local t=$1 status=0
  # GraphJson gets inputs up to 1 MiB so deep nesting and long arrays are reachable.
  local max_len
  max_len=$([ "$t" = GraphJson ] && echo 1048576 || echo 262144)
  rm -f build-fuzz/logs/"$t".failed
  "./$build/bin/fuzz_$t" build-fuzz/corpus/"$t" -max_total_time="$seconds" -max_len="$max_len" \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix=build-fuzz/crashes/"$t"- \
    > build-fuzz/logs/"$t".log 2>&1 || status=$?
  [ "$status" -eq 0 ] || echo "$status" > build-fuzz/logs/"$t".failed
}
echo "fuzz: ${#targets[@]} target(s) for ${seconds}s each, $jobs at a time"
running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
  fuzz_one "$t" &
  running=$((running + 1))
done
wait || true
failed=()
for t in "${targets[@]}"; do
  echo "fuzz: $t: $(grep -E "stat::number_of_executed_units" build-fuzz/logs/"$t".log | sed 's/.*: //') executions"
  if [ -f build-fuzz/logs/"$t".failed ]; then
    grep -E "ERROR|crash-|leak-|timeout-|oom-" build-fuzz/logs/"$t".log | tail -4 || true  # none: still report it
    echo "fuzz: $t FAILED (exit $(cat build-fuzz/logs/"$t".failed)); log build-fuzz/logs/$t.log, input in build-fuzz/crashes/"
    failed+=("$t")
  fi
done
# A crash, leak, timeout or out-of-memory in any target fails the run.
if [ ${#failed[@]} -ne 0 ]; then
  echo "fuzz: failed: ${failed[*]}"
  exit 1
fi
echo "fuzz: ${#targets[@]} target(s), no failures"
