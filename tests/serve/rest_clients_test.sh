#!/usr/bin/env bash
# `hetrt serve` through curl (REST JSON): health, metadata, inference checked
# against the fixtures' expected outputs, request id echo, output selection,
# the repository extension (index, unload, load), metrics, and every bad input
# of the protocol answered with a 4xx and {"error": ...} while the server keeps
# serving. JSON is checked with Debian's python3 (json, numpy).
#
# Usage: rest_clients_test.sh HETRT   (HETRT_FIXTURES: the fixtures' folder)
# It builds a repository from the fixtures and runs itself again under
# server_process.py, which starts the server and sets HETRT_HTTP/HETRT_METRICS.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
python=/usr/bin/python3
max_request_bytes=1048576  # --max-request-mib 1

if [ -z "${HETRT_HTTP:-}" ]; then
  hetrt=${1:?usage: rest_clients_test.sh HETRT}
  root=${HETRT_FIXTURES:-$here/../../../shared/fixtures}
  export HETRT_TVM_FIXTURES=$root/tvm-0.18
  if [ ! -d "$HETRT_TVM_FIXTURES/mlp" ] || [ ! -d "$HETRT_TVM_FIXTURES/add3" ]; then
    echo "fixtures not found under $root (set HETRT_FIXTURES)" >&2
    case ",${HETRT_REQUIRE:-}," in *,-fixtures,*) exit 77 ;; *,all,* | *,fixtures,*) exit 1 ;; esac
    exit 77
  fi
  repo=$(mktemp -d)
  trap 'rm -rf "$repo"' EXIT
  mkdir -p "$repo/mlp/1" "$repo/add3/1" "$repo/broken/1"
  ln -s "$HETRT_TVM_FIXTURES/mlp/deploy.so" "$repo/mlp/1/deploy.so"
  for f in graph.json lib.so params.params; do ln -s "$HETRT_TVM_FIXTURES/add3/$f" "$repo/add3/1/$f"; done
  echo "not a shared library" > "$repo/broken/1/deploy.so"
  status=0
  "$python" "$here/server_process.py" "$hetrt" "$repo" --max-request-mib 1 -- \
    bash "$0" "$hetrt" || status=$?
  exit $status
fi

fixtures=$HETRT_TVM_FIXTURES
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

# request METHOD PATH [curl args...]: sets $status, $body, $content_type.
request() {
  local method=$1 path=$2
  shift 2
  local out
  out=$(curl -sS --max-time 30 -o "$tmp/body" -w '%{http_code} %{content_type}' -X "$method" \
    "http://$HETRT_HTTP$path" "$@") || out="000 curl-failed"
  status=${out%% *}
  content_type=${out#* }
  body=$(cat "$tmp/body" 2>/dev/null || true)
}

pass() { echo "ok: $1"; }
failed() {
  echo "FAIL: $1" >&2
  failures=$((failures + 1))
}

# expect STATUS WHAT
expect() {
  if [ "$status" = "$1" ]; then pass "$2"; else failed "$2: status $status, expected $1: ${body:0:300}"; fi
}

# json_ok WHAT PYTHON-EXPRESSION: the expression over j (the body) and np must hold.
json_ok() {
  if "$python" - "$tmp/body" "$fixtures" "$2" <<'EOF' 2>"$tmp/why"; then pass "$1"; else failed "$1: $(cat "$tmp/why") body: ${body:0:300}"; fi
import json, sys
import numpy as np
j = json.load(open(sys.argv[1]))
fixtures = sys.argv[2]
def expected(model):
    return np.load(f"{fixtures}/{model}/output_0.npy")
def output(name="output_0"):
    out = next(o for o in j["outputs"] if o["name"] == name)
    return np.array(out["data"], dtype=np.float32).reshape(out["shape"])
def close(model, name="output_0"):
    got, want = output(name), expected(model)
    return got.shape == want.shape and np.allclose(got, want, rtol=1e-5, atol=1e-6)
assert eval(sys.argv[3]), sys.argv[3]
EOF
}

# error_is STATUS WHAT FRAGMENT: a JSON {"error"} with FRAGMENT in it.
error_is() {
  expect "$1" "$2"
  if [ "$content_type" != "application/json" ]; then failed "$2: content type '$content_type'"; fi
  json_ok "$2: error names '$3'" "'$3' in j['error']"
}

# Requests written from the fixtures' inputs.
"$python" - "$fixtures" "$tmp" <<'EOF'
import json, sys
import numpy as np
fixtures, out = sys.argv[1], sys.argv[2]
data = np.load(f"{fixtures}/mlp/inputs_data.npy")
def write(name, request):
    with open(f"{out}/{name}.json", "w") as f:
        json.dump(request, f)
def mlp(**fields):
    return dict(inputs=[dict(name="data", shape=list(data.shape), datatype="FP32", data=data.flatten().tolist())],
                **fields)
write("mlp", mlp(id="curl-1"))
write("mlp_no_id", mlp())
add3 = [dict(name=n, shape=[1, 10], datatype="FP32", data=np.load(f"{fixtures}/add3/inputs_{n}.npy").tolist())
        for n in "abc"]  # nested [[...]]
write("add3", dict(inputs=add3, outputs=[dict(name="output_0")]))
bad = mlp()
bad["inputs"][0]["datatype"] = "INT32"
bad["inputs"][0]["data"] = [int(round(v)) for v in bad["inputs"][0]["data"]]
write("wrong_dtype", bad)
bad = mlp()
bad["inputs"][0]["shape"] = [1, 783]
bad["inputs"][0]["data"] = bad["inputs"][0]["data"][:783]
write("wrong_shape", bad)
bad = mlp()
bad["inputs"][0]["data"] = bad["inputs"][0]["data"][:700]
write("wrong_count", bad)
bad = mlp()
bad["inputs"][0]["name"] = "nope"
write("unknown_input", bad)
write("unknown_output", mlp(outputs=[dict(name="output_9")]))
bad = mlp()
bad["inputs"][0]["datatype"] = "UINT8"
bad["inputs"][0]["data"] = [300] * 784
write("out_of_range", bad)
with open(f"{out}/big.json", "w") as f:
    f.write('{"inputs": [' + " " * 1100000 + "]}")
EOF

infer() {  # infer MODEL_PATH REQUEST_FILE [curl args]
  local path=$1 file=$2
  shift 2
  request POST "$path/infer" -H 'Content-Type: application/json' --data-binary "@$tmp/$file.json" "$@"
}

# ---- health and server metadata ----
request GET /v2/health/live
expect 200 "live"
request GET /v2
expect 200 "server metadata"
json_ok "server metadata fields" "j['name'] == 'hetrt' and j['version'] and isinstance(j['extensions'], list)"

# ---- model metadata ----
for path in /v2/models/mlp /v2/models/mlp/versions/1; do
  request GET "$path"
  expect 200 "metadata $path"
  json_ok "metadata $path fields" "j['name'] == 'mlp' and '1' in j['versions'] and j['platform'] and \
j['inputs'] == [{'name': 'data', 'datatype': 'FP32', 'shape': [1, 784]}] and \
j['outputs'] == [{'name': 'output_0', 'datatype': 'FP32', 'shape': [1, 10]}]"
done
request GET /v2/models/add3
json_ok "metadata add3 inputs" "[i['name'] for i in j['inputs']] == ['a', 'b', 'c']"
for path in /v2/models/mlp/ready /v2/models/mlp/versions/1/ready /v2/models/add3/ready; do
  request GET "$path"
  expect 200 "$path"
done

# ---- inference ----
infer /v2/models/mlp mlp
expect 200 "infer mlp"
if [ "$content_type" != "application/json" ]; then failed "infer mlp: content type '$content_type'"; fi
json_ok "infer mlp matches output_0.npy" "close('mlp')"
json_ok "infer mlp echoes id, names model and version" "j['id'] == 'curl-1' and j['model_name'] == 'mlp' and \
j['model_version'] == '1' and j['outputs'][0]['datatype'] == 'FP32' and j['outputs'][0]['shape'] == [1, 10]"
infer /v2/models/mlp/versions/1 mlp_no_id
expect 200 "infer mlp version 1"
json_ok "no id without one in the request" "'id' not in j and close('mlp')"
infer /v2/models/add3 add3
expect 200 "infer add3 (nested data, outputs selection)"
json_ok "infer add3 matches output_0.npy" "close('add3') and [o['name'] for o in j['outputs']] == ['output_0']"

# ---- metrics ----
out=$(curl -sS --max-time 30 -o "$tmp/metrics" -w '%{http_code} %{content_type}' "http://$HETRT_METRICS/metrics") ||
  out="000"
case "$out" in
  "200 text/plain; version=0.0.4"*) pass "metrics content type" ;;
  *) failed "metrics: $out" ;;
esac
if grep -q 'mlp' "$tmp/metrics" && grep -q '^# TYPE ' "$tmp/metrics"; then pass "metrics name the model"; else
  failed "metrics: no '# TYPE' line or no mention of mlp: $(head -c 300 "$tmp/metrics")"
fi
status=$(curl -sS --max-time 30 -o /dev/null -w '%{http_code}' "http://$HETRT_METRICS/nope") || true
[ "$status" = 404 ] && pass "metrics: unknown path 404" || failed "metrics: unknown path gave $status"

# ---- bad requests: each a 4xx with {"error": ...} ----
request POST /v2/models/mlp/infer --data-binary '{"inputs": [}'
error_is 400 "malformed JSON" "not valid JSON"
request POST /v2/models/mlp/infer --data-binary '[1, 2]'
error_is 400 "JSON that is not an object" "must be a JSON object"
infer /v2/models/mlp wrong_dtype
error_is 400 "wrong datatype" "FP32"
infer /v2/models/mlp wrong_shape
error_is 400 "wrong shape" "784"
infer /v2/models/mlp wrong_count
error_is 400 "data count disagrees with shape" "has 700 values; shape [1, 784] needs 784"
infer /v2/models/mlp out_of_range
error_is 400 "value out of range for its datatype" "300 does not fit UINT8"
infer /v2/models/nope mlp
error_is 404 "unknown model" "nope"
infer /v2/models/mlp/versions/7 mlp
error_is 404 "unknown version" "7"
infer /v2/models/mlp unknown_input
if [ "$status" = 400 ] || [ "$status" = 404 ]; then pass "unknown input: $status"; else failed "unknown input: $status"; fi
json_ok "unknown input named" "'nope' in j['error']"
infer /v2/models/mlp unknown_output
if [ "$status" = 400 ] || [ "$status" = 404 ]; then pass "unknown output: $status"; else failed "unknown output: $status"; fi
json_ok "unknown output named" "'output_9' in j['error']"
request GET /v2/models/nope
error_is 404 "metadata of an unknown model" "nope"
request GET /v2/nothing/here
error_is 404 "unknown path" "no route for GET /v2/nothing/here"
request GET /v2/models/mlp/infer
error_is 404 "GET on the infer path" "no route"
infer /v2/models/mlp big -H 'Expect:'
error_is 413 "oversized body" "$max_request_bytes"
infer /v2/models/mlp big -H 'Expect: 100-continue'
error_is 413 "oversized body refused at Expect: 100-continue" "$max_request_bytes"

# A client that sends half a body and disconnects, and one that stays silent.
host=${HETRT_HTTP%:*} port=${HETRT_HTTP##*:}
exec 3<>"/dev/tcp/$host/$port"
printf 'POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n{"inputs": [{"name"' >&3
exec 3>&-
exec 4<>"/dev/tcp/$host/$port"
printf 'POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\n' >&4
infer /v2/models/mlp mlp
expect 200 "served while one client hung up mid-body and another stalls"
json_ok "still correct" "close('mlp')"
exec 4>&-

# ---- repository extension ----
request POST /v2/repository/index
expect 200 "repository index"
json_ok "index lists every model" "sorted(e['name'] for e in j) == ['add3', 'broken', 'mlp'] and \
all(e['state'] == 'READY' for e in j if e['name'] != 'broken')"
json_ok "index: the broken model is not ready and says why" \
  "[e for e in j if e['name'] == 'broken'][0]['state'] != 'READY' and [e for e in j if e['name'] == 'broken'][0]['reason']"
request POST /v2/repository/index --data-binary '{"ready": true}'
json_ok "index of ready models" "sorted(e['name'] for e in j) == ['add3', 'mlp']"
request POST /v2/repository/index --data-binary '{"ready": "yes"}'
error_is 400 "bad index request" "ready"
request GET /v2/models/broken/ready
if [ "$status" != 200 ]; then pass "broken model not ready ($status)"; else failed "broken model reported ready"; fi
request GET /v2/health/ready
expect 503 "server not ready while a model it was asked to load failed"
request POST /v2/repository/models/broken/unload
expect 200 "unload broken"
request GET /v2/health/ready
expect 200 "server ready once only loadable models are asked for"

request POST /v2/repository/models/add3/unload
expect 200 "unload add3"
request GET /v2/models/add3/ready
if [ "$status" != 200 ]; then pass "add3 not ready after unload ($status)"; else failed "add3 ready after unload"; fi
infer /v2/models/add3 add3
if [ "$status" = 404 ] || [ "$status" = 503 ]; then pass "infer on an unloaded model: $status"; else
  failed "infer on an unloaded model: $status ${body:0:200}"
fi
json_ok "unloaded model named in the error" "'add3' in j['error']"
request POST /v2/repository/index
json_ok "index shows add3 unloaded" "[e for e in j if e['name'] == 'add3'][0]['state'] != 'READY'"
request POST /v2/repository/models/add3/load
expect 200 "load add3"
infer /v2/models/add3 add3
expect 200 "infer add3 after reload"
json_ok "add3 after reload matches" "close('add3')"
request POST /v2/repository/models/nope/load
error_is 404 "load of an unknown model" "nope"
request POST /v2/repository/models/mlp/load --data-binary '{"parameters": {"config": "{}"}}'
error_is 400 "load with a config override" "config"

# After everything, a good request still works.
infer /v2/models/mlp mlp
expect 200 "final request"
json_ok "final request correct" "close('mlp') and j['id'] == 'curl-1'"

if [ "$failures" -ne 0 ]; then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "all REST client checks passed"
