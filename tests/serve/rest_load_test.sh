#!/usr/bin/env bash
# A bounded load from h2load (nghttp2-client), an HTTP client nobody here wrote:
# 4000 REST JSON inference requests on add3 over 16 keep-alive connections to a
# 2-instance model; every one must come back 200 and the server's metrics must
# count exactly those. (Timings are the bench's job; this checks correctness
# under concurrency.)
# Usage: rest_load_test.sh HETRT   (HETRT_FIXTURES: the fixtures' folder)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ -z "${HETRT_HTTP:-}" ]; then
  hetrt=${1:?usage: rest_load_test.sh HETRT}
  root=${HETRT_FIXTURES:-$here/../../../shared/fixtures}
  if ! command -v h2load >/dev/null; then echo "FAIL: h2load missing (Debian nghttp2-client; scripts/setup.sh)"; exit 1; fi
  if [ ! -d "$root/tvm-0.18/add3" ]; then
    echo "fixtures not found under $root (set HETRT_FIXTURES)" >&2
    case ",${HETRT_REQUIRE:-}," in *,-fixtures,*) exit 77 ;; *,all,* | *,fixtures,*) exit 1 ;; esac
    exit 77
  fi
  repo=$(mktemp -d)
  trap 'rm -rf "$repo"' EXIT
  mkdir -p "$repo/add3/1"
  ln -s "$root/tvm-0.18/add3/deploy.so" "$repo/add3/1/deploy.so"
  echo '{"instance_group": [{"count": 2}], "max_queue_size": 64}' > "$repo/add3/config.json"
  exec /usr/bin/python3 "$here/server_process.py" "$hetrt" "$repo" -- bash "$0" "$hetrt"
fi

body=$(mktemp)
trap 'rm -f "$body"' EXIT
ones='[1,1,1,1,1,1,1,1,1,1]'
printf '{"inputs":[{"name":"a","datatype":"FP32","shape":[1,10],"data":%s},{"name":"b","datatype":"FP32","shape":[1,10],"data":%s},{"name":"c","datatype":"FP32","shape":[1,10],"data":%s}]}' \
  "$ones" "$ones" "$ones" > "$body"
out=$(h2load --h1 -n 4000 -c 16 -d "$body" -H 'Content-Type: application/json' \
  "http://$HETRT_HTTP/v2/models/add3/infer" 2>&1)
echo "$out" | grep -E "^requests:|^status codes:"
echo "$out" | grep -q "^requests: 4000 total, 4000 started, 4000 done, 4000 succeeded, 0 failed, 0 errored, 0 timeout" ||
  { echo "FAIL: not every request succeeded"; echo "$out"; exit 1; }
echo "$out" | grep -q "^status codes: 4000 2xx, 0 3xx, 0 4xx, 0 5xx" || { echo "FAIL: not all 200"; exit 1; }
metrics=$(curl -sf "http://$HETRT_METRICS/metrics")
echo "$metrics" | grep -q '^hetrt_inference_requests_total{model="add3",version="1",status="success"} 4000$' ||
  { echo "FAIL: metrics do not count 4000 successes"; echo "$metrics"; exit 1; }
# Both instances took work.
for i in 0 1; do
  n=$(echo "$metrics" | sed -n "s/^hetrt_instance_executions_total{model=\"add3\",version=\"1\",instance=\"$i\",devices=\"cpu\"} //p")
  [ "${n:-0}" != 0 ] || { echo "FAIL: instance $i ran nothing"; exit 1; }
  echo "instance $i: $n executions"
done
echo "ok"
