#!/usr/bin/env python3
"""The container image's checks, made from outside it (scripts/test_container.sh).

  container_test.py repository DEST TARGET [cuda]
      copies the fixture models TARGET serves into DEST (a Triton-layout
      repository, real files: the container cannot follow links out of it);
      with "cuda" the CUDA model too
  container_test.py check TARGET HTTP GRPC METRICS [cuda]
      against a running server (HOST:PORT each): readiness, every model's
      metadata and outputs against the fixtures (REST, JSON and binary), gRPC
      health, /metrics counting the inferences; with "cuda" the CUDA model's too
  container_test.py plugins cuda|none -- COMMAND...
      runs COMMAND (`hetrt plugins` in the container): with "cuda" it must
      list CUDA devices, with "none" say that there is no driver
  container_test.py no-driver TARGET HTTP -- LOG_COMMAND...
      against a server without a CUDA driver, its repository made with "cuda":
      TARGET's models served as by `check`, the CUDA model unavailable saying
      why, and the server's log (LOG_COMMAND: podman logs) saying it too
  container_test.py drain HTTP METRICS -- STOP_COMMAND...
      sends requests, waits until /metrics shows them all in flight (queued
      or running), runs STOP_COMMAND (podman stop), and requires every one
      answered with TVM's output

TARGET is the Dockerfile target: serve (CPU, CPU+OpenCL, Vulkan, MLF models)
or serve-cpu (CPU and MLF models); both carry the CUDA plugin. Fixtures from
$HETRT_FIXTURES, default <repo>/../shared/fixtures."""
import http.client
import json
import os
import re
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

# The CUDA model the fake CUDA driver (tests/cuda/fake_*.cc) can run: its one
# kernel, tvmgen_default_fused_add_kernel, is among the fake's kernels.
CUDA_MODELS = {
    "hetero_cuda": ({"deploy.so": "hetero_cuda_seed/deploy.so"},
                    {"instance_group": [{"count": 1, "devices": ["cpu", "cuda"]}]},
                    "hetero_cuda_seed/inputs.params", "hetero_cuda_seed/outputs.params"),
}
# What the CUDA plugin says where no libcuda.so.1 is found (plugins/cuda/cuda_driver.cc).
NO_DRIVER = "libcuda.so.1 not found (no NVIDIA driver installed)"


def models(target, cuda=False):
    if target == "serve":
        chosen = {**CPU_MODELS, **DEVICE_MODELS}
    elif target == "serve-cpu":
        chosen = dict(CPU_MODELS)
    else:
        raise SystemExit(f"unknown target {target!r}: serve or serve-cpu")
    return {**chosen, **CUDA_MODELS} if cuda else chosen


def fail(message):
    print("FAIL:", message, file=sys.stderr, flush=True)
    sys.exit(1)


def make_repository(dest, target, cuda=False):
    if not os.path.isdir(FIXTURES):
        sys.exit(server_process.missing_fixtures(FIXTURES))
    shutil.rmtree(dest, ignore_errors=True)
    for model, (files, config, _, _) in models(target, cuda).items():
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
    print(f"repository {dest}: {', '.join(sorted(models(target, cuda)))}")


def call(address, method, path, body=None, headers=None, timeout=60):
    host, port = address.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    try:
        conn.request(method, path, body, headers or {})
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


def wait_ready(address, timeout=180, path="/v2/health/ready"):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last, _, _ = call(address, "GET", path, timeout=5)
            if last == 200:
                return
        except OSError as error:
            last = error
        time.sleep(0.5)
    fail(f"{path} at {address} did not answer 200 within {timeout} s (last: {last})")


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


def check_models(http_address, served):
    for model, (_, _, inputs_file, outputs_file) in served.items():
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


def check(target, http_address, grpc_address, metrics_address, cuda=False):
    wait_ready(http_address)
    check_models(http_address, models(target, cuda))
    answer = server_process.grpc_health(grpc_address)
    if answer != server_process.SERVING:
        fail(f"gRPC health at {grpc_address} answered {answer!r}")
    status, _, data = call(metrics_address, "GET", "/metrics")
    text = data.decode()
    for model in models(target, cuda):
        counted = [line for line in text.splitlines()
                   if line.startswith("hetrt_inference_requests_total{") and f'model="{model}"' in line
                   and 'status="success"' in line]
        if status != 200 or not counted or float(counted[0].rsplit(" ", 1)[1]) < 2:
            fail(f"/metrics does not count {model}'s 2 inferences: {counted or text[:500]}")
    print("gRPC health SERVING; /metrics counts every model's inferences")


def check_plugins(want, command):
    """`hetrt plugins` (COMMAND) lists CUDA devices (want "cuda") or says there is no driver ("none")."""
    ran = subprocess.run(command, capture_output=True, text=True)
    text = ran.stdout + ran.stderr
    if ran.returncode != 0:
        fail(f"{' '.join(command)} exited {ran.returncode}: {text[-2000:]}")
    line = re.search(r"device cuda: (\d+) device\(s\)(.*)", text)
    if line is None:
        fail(f"`hetrt plugins` lists no CUDA plugin:\n{text}")
    if want == "cuda":
        if int(line.group(1)) < 1 or not re.search(r"^\s+cuda:0: ", text, re.M):
            fail(f"`hetrt plugins` lists no CUDA device:\n{text}")
    elif line.group(1) != "0" or NO_DRIVER not in line.group(2):
        fail(f"`hetrt plugins` does not say why there is no CUDA device ({NO_DRIVER!r}):\n{text}")
    print(f"hetrt plugins: {line.group(0).strip()}")


def check_no_driver(target, http_address, log_command):
    """Without a CUDA driver: the other models served, the CUDA ones not, and why, in the log too."""
    wait_ready(http_address, path="/v2/health/live")  # the listeners open once the repository is loaded
    check_models(http_address, models(target))
    # A model that failed to load keeps the server not ready (serve/inference_server.cc, Ready()).
    status, _, _ = call(http_address, "GET", "/v2/health/ready")
    if status != 503:
        fail(f"/v2/health/ready answered {status} with a CUDA model and no driver, want 503")
    status, _, data = call(http_address, "POST", "/v2/repository/index", "{}", {"Content-Type": "application/json"})
    index = {e["name"]: e for e in json.loads(data)} if status == 200 else {}
    ran = subprocess.run(log_command, capture_output=True, text=True)
    log = (ran.stdout + ran.stderr).splitlines()
    for model in CUDA_MODELS:
        status, _, data = call(http_address, "GET", f"/v2/models/{model}")
        if status != 503 or NO_DRIVER.encode() not in data:
            fail(f"{model}: metadata answered {status} {data[:300]!r}, want 503 saying {NO_DRIVER!r}")
        entry = index.get(model, {})
        if entry.get("state") != "UNAVAILABLE" or NO_DRIVER not in entry.get("reason", ""):
            fail(f"{model}: the repository index lists {entry or 'nothing'}, want UNAVAILABLE saying {NO_DRIVER!r}")
        said = [line for line in log if f"model '{model}' is not served" in line and NO_DRIVER in line]
        if not said:
            fail(f"the server's log does not say why {model} is not served:\n" + "\n".join(log[-40:]))
        print(f"{model}: UNAVAILABLE; the server's log: {said[0].strip()}")


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
    if len(argv) in (4, 5) and argv[1] == "repository" and argv[4:] in ([], ["cuda"]):
        make_repository(argv[2], argv[3], cuda=len(argv) == 5)
    elif len(argv) in (6, 7) and argv[1] == "check" and argv[6:] in ([], ["cuda"]):
        check(*argv[2:6], cuda=len(argv) == 7)
    elif len(argv) >= 5 and argv[1] == "plugins" and argv[2] in ("cuda", "none") and argv[3] == "--":
        check_plugins(argv[2], argv[4:])
    elif len(argv) >= 6 and argv[1] == "no-driver" and argv[4] == "--":
        check_no_driver(argv[2], argv[3], argv[5:])
    elif len(argv) >= 6 and argv[1] == "drain" and argv[4] == "--":
        drain(argv[2], argv[3], argv[5:])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
