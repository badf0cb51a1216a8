#!/usr/bin/env python3
"""The container image's checks, made from outside it (scripts/test_container.sh).

  container_test.py repository DEST TARGET
      copies the fixture models TARGET serves into DEST (a Triton-layout
      repository, real files: the container cannot follow links out of it)
  container_test.py check TARGET HTTP GRPC METRICS
      against a running server (HOST:PORT each): readiness, every model's
      metadata and outputs against the fixtures (REST, JSON and binary), gRPC
      health, /metrics counting the inferences
  container_test.py drain HTTP METRICS -- STOP_COMMAND...
      sends requests, waits until /metrics shows them all in flight (queued
      or running), runs STOP_COMMAND (podman stop), and requires every one
      answered with TVM's output

TARGET is the Dockerfile target: serve (CPU, CPU+OpenCL, Vulkan, MLF models)
or serve-cpu (CPU and MLF models). Fixtures from $HETRT_FIXTURES, default
<repo>/../shared/fixtures."""
import http.client
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "serve"))
import server_process  # noqa: E402  (param dicts, gRPC health)

import numpy as np  # noqa: E402

FIXTURES = os.path.join(os.path.abspath(os.environ.get(
    "HETRT_FIXTURES", os.path.join(HERE, "..", "..", "..", "shared", "fixtures"))), "tvm-0.18")

# model: (files to copy {name in the version folder: fixture path}, config or None,
#         inputs.params, outputs.params)
CPU_MODELS = {
    "mlp": ({"deploy.so": "mlp/deploy.so"}, None, "mlp/inputs.params", "mlp/outputs.params"),
    "mlp_mlf": ({"mlp_graph_mlf.tar": "mlf/mlp_graph_mlf.tar"}, None,
                "mlf/mlp_inputs.params", "mlf/mlp_outputs.params"),
    # Long enough per run (tens of ms) to still be running when SIGTERM comes.
    "resnet18": ({"deploy.so": "resnet18/deploy.so"}, None, "resnet18/inputs.params", "resnet18/outputs.params"),
}
DEVICE_MODELS = {
    "hetero_opencl": ({"deploy.so": "hetero_opencl_seed/deploy.so"},
                      {"instance_group": [{"count": 1, "devices": ["cpu", "opencl"]}]},
                      "hetero_opencl_seed/inputs.params", "hetero_opencl_seed/outputs.params"),
    "mlp_vulkan": ({"deploy.so": "mlp_vulkan/deploy.so"},
                   {"instance_group": [{"count": 1, "devices": ["cpu", "vulkan"]}]},
                   "mlp_vulkan/inputs.params", "mlp_vulkan/outputs.params"),
}


def models(target):
    if target == "serve":
        return {**CPU_MODELS, **DEVICE_MODELS}
    if target == "serve-cpu":
        return dict(CPU_MODELS)
    raise SystemExit(f"unknown target {target!r}: serve or serve-cpu")


def fail(message):
    print("FAIL:", message, file=sys.stderr, flush=True)
    sys.exit(1)


def make_repository(dest, target):
    if not os.path.isdir(FIXTURES):
        sys.exit(server_process.missing_fixtures(FIXTURES))
    shutil.rmtree(dest, ignore_errors=True)
    for model, (files, config, _, _) in models(target).items():
        version = os.path.join(dest, model, "1")
        os.makedirs(version)
        for name, source in files.items():
            shutil.copyfile(os.path.join(FIXTURES, source), os.path.join(version, name))
        if config is not None:
            with open(os.path.join(dest, model, "config.json"), "w") as f:
                json.dump(config, f)
    # The container runs as uid 1000: everything readable by others.
    for folder, dirs, names in os.walk(dest):
        os.chmod(folder, 0o755)
        for n in names:
            os.chmod(os.path.join(folder, n), 0o644)
    print(f"repository {dest}: {', '.join(sorted(models(target)))}")


def call(address, method, path, body=None, headers=None, timeout=60):
    host, port = address.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    try:
        conn.request(method, path, body, headers or {})
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


def wait_ready(address, timeout=180):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last, _, _ = call(address, "GET", "/v2/health/ready", timeout=5)
            if last == 200:
                return
        except OSError as error:
            last = error
        time.sleep(0.5)
    fail(f"/v2/health/ready at {address} did not answer 200 within {timeout} s (last: {last})")


def infer_json(address, model, inputs):
    body = {"inputs": [{"name": n, "shape": list(a.shape), "datatype": "FP32",
                        "data": a.astype(np.float32).ravel().tolist()} for n, a in inputs.items()]}
    status, _, data = call(address, "POST", f"/v2/models/{model}/infer", json.dumps(body),
                           {"Content-Type": "application/json"})
    if status != 200:
        fail(f"{model}: JSON inference answered {status}: {data[:300]!r}")
    return {o["name"]: np.array(o["data"], dtype=np.float32).reshape(o["shape"]) for o in json.loads(data)["outputs"]}


def infer_binary(address, model, inputs):
    """The protocol's binary extension: JSON header, then raw little-endian tensors."""
    header = json.dumps({
        "inputs": [{"name": n, "shape": list(a.shape), "datatype": "FP32",
                    "parameters": {"binary_data_size": a.nbytes}} for n, a in inputs.items()],
        "parameters": {"binary_data_output": True}}).encode()
    body = header + b"".join(a.astype("<f4").tobytes() for a in inputs.values())
    status, headers, data = call(address, "POST", f"/v2/models/{model}/infer", body,
                                 {"Content-Type": "application/octet-stream",
                                  "Inference-Header-Content-Length": str(len(header))})
    if status != 200:
        fail(f"{model}: binary inference answered {status}: {data[:300]!r}")
    size = int({k.lower(): v for k, v in headers.items()}["inference-header-content-length"])
    outputs, at = {}, size
    for o in json.loads(data[:size])["outputs"]:
        n = o["parameters"]["binary_data_size"]
        outputs[o["name"]] = np.frombuffer(data[at:at + n], dtype="<f4").reshape(o["shape"])
        at += n
    return outputs


def check_outputs(model, got, want):
    for name, expected in want.items():
        if name not in got:
            fail(f"{model}: no output {name} (got {sorted(got)})")
        if got[name].shape != expected.shape or not np.allclose(got[name], expected, rtol=1e-4, atol=1e-4):
            error = np.max(np.abs(got[name].astype(np.float64) - expected)) if got[name].shape == expected.shape \
                else "shape " + str(got[name].shape)
            fail(f"{model}: output {name} differs from TVM's (max error {error})")


def check(target, http_address, grpc_address, metrics_address):
    wait_ready(http_address)
    for model, (_, _, inputs_file, outputs_file) in models(target).items():
        status, _, data = call(http_address, "GET", f"/v2/models/{model}")
        if status != 200:
            fail(f"{model}: metadata answered {status}: {data[:300]!r}")
        metadata = json.loads(data)
        inputs = server_process.read_param_dict(os.path.join(FIXTURES, inputs_file))
        want = server_process.read_param_dict(os.path.join(FIXTURES, outputs_file))
        if sorted(i["name"] for i in metadata["inputs"]) != sorted(inputs):
            fail(f"{model}: metadata inputs {metadata['inputs']}, fixture inputs {sorted(inputs)}")
        check_outputs(model, infer_json(http_address, model, inputs), want)
        check_outputs(model, infer_binary(http_address, model, inputs), want)
        print(f"{model}: metadata and outputs (JSON and binary) match TVM's")
    answer = server_process.grpc_health(grpc_address)
    if answer != server_process.SERVING:
        fail(f"gRPC health at {grpc_address} answered {answer!r}")
    status, _, data = call(metrics_address, "GET", "/metrics")
    text = data.decode()
    for model in models(target):
        counted = [line for line in text.splitlines()
                   if line.startswith("hetrt_inference_requests_total{") and f'model="{model}"' in line
                   and 'status="success"' in line]
        if status != 200 or not counted or float(counted[0].rsplit(" ", 1)[1]) < 2:
            fail(f"/metrics does not count {model}'s 2 inferences: {counted or text[:500]}")
    print("gRPC health SERVING; /metrics counts every model's inferences")


def drain(http_address, metrics_address, stop_command):
    """Requests in flight when SIGTERM comes all get their answer."""
    inputs = server_process.read_param_dict(os.path.join(FIXTURES, CPU_MODELS["resnet18"][2]))
    want = server_process.read_param_dict(os.path.join(FIXTURES, CPU_MODELS["resnet18"][3]))
    count = 8
    results = []

    def one():
        try:
            got = infer_binary(http_address, "resnet18", inputs)
            results.append(("ok", got))
        except SystemExit:  # infer_binary's fail(): a non-200 answer, printed already
            results.append(("failed", None))
        except Exception as error:  # noqa: BLE001  (a reset or timeout: reported below)
            results.append(("error", repr(error)))

    threads = [threading.Thread(target=one) for _ in range(count)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 30
    while server_process.in_flight(metrics_address, "resnet18") < count:
        if time.monotonic() > deadline or not any(t.is_alive() for t in threads):
            fail(f"the {count} requests were never in flight at once: the drain would prove nothing")
        time.sleep(0.005)
    started = time.monotonic()
    stopped = subprocess.run(stop_command, capture_output=True, text=True)
    for t in threads:
        t.join(120)
    if stopped.returncode != 0:
        fail(f"{' '.join(stop_command)} failed: {stopped.stderr}")
    if len(results) != count or any(kind != "ok" for kind, _ in results):
        fail(f"requests in flight at SIGTERM were not all answered: {[r for r in results if r[0] != 'ok']}")
    for _, got in results:
        check_outputs("resnet18", got, want)
    print(f"{count} requests in flight at SIGTERM all answered with TVM's output; "
          f"stopped in {time.monotonic() - started:.1f} s")


def main(argv):
    if len(argv) >= 4 and argv[1] == "repository":
        make_repository(argv[2], argv[3])
    elif len(argv) == 6 and argv[1] == "check":
        check(*argv[2:6])
    elif len(argv) >= 6 and argv[1] == "drain" and argv[4] == "--":
        drain(argv[2], argv[3], argv[5:])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
