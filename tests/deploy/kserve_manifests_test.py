#!/usr/bin/env python3
"""Runs each KServe ServingRuntime of deploy/kserve/ the way its pod would,
without Kubernetes: the container's command and args (ports moved to free ones,
consistently, and the model repository to a fixture model), then checks what
the cluster relies on:
  - the declared containerPort is the listener its name promises (http1: REST,
    h2c: gRPC), and a model answers an inference there;
  - the liveness and readiness probes answer 200 on their ports and paths;
  - the Prometheus annotation's port and path serve hetrt's metrics;
  - SIGTERM drains and exits 0 (the pod's termination);
that every InferenceService names a runtime, format and protocol that a
ServingRuntime here declares; and what a restricted cluster's review asks of
each container: non-root, no privilege escalation, every capability dropped,
seccomp RuntimeDefault, a read-only root with /tmp as a mounted volume, a
startup probe, and no thread count kept equal to the CPU limit by hand.
The GPU variants (a runtime whose container limits nvidia.com/gpu) must also
be what a GPU node pool schedules: whole GPUs, a toleration of the pool's
nvidia.com/gpu NoSchedule taint, a node selector or node affinity, never
selected automatically, and every InferenceService on one sets the pod's
runtimeClassName; and a GPU runtime "<name>-gpu..." is its CPU twin
("<name>...") but for resources, scheduling and the NVIDIA environment, so the
two cannot drift apart (image, command, args, ports, probes, security).
(tests/deploy/manifest_schema validates the Kubernetes fields' schemas.)

Usage: kserve_manifests_test.py HETRT MANIFEST_DIR"""
import glob
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from math import prod

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "serve"))
import server_process  # noqa: E402  (tests/serve: repository layout, fixture checks)

FIXTURES = os.path.abspath(os.path.join(os.environ.get("HETRT_FIXTURES", "../shared/fixtures"), "tvm-0.18"))


def load_manifests(directory):
    docs = []
    for path in sorted(glob.glob(os.path.join(directory, "*.yaml"))):
        with open(path, encoding="utf-8") as f:
            docs += [(os.path.basename(path), d) for d in yaml.safe_load_all(f) if d]
    return docs


def http_get(port, path):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
        return r.status, r.read().decode()


def check_restricted(name, spec):
    """The fields a restricted (Pod Security "restricted") cluster and its review require."""
    container = spec["containers"][0]
    security = container.get("securityContext", {})
    expected = {"runAsNonRoot": True, "allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True}
    for field, value in expected.items():
        assert security.get(field) is value, f"{name}: securityContext.{field} is {security.get(field)!r}, want {value}"
    assert isinstance(security.get("runAsUser"), int) and security["runAsUser"] > 0, f"{name}: runAsUser {security}"
    assert security.get("capabilities", {}).get("drop") == ["ALL"], f"{name}: capabilities {security}"
    assert security.get("seccompProfile", {}).get("type") == "RuntimeDefault", f"{name}: seccompProfile {security}"
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    mounts = {m["mountPath"]: m["name"] for m in container.get("volumeMounts", [])}
    assert "/tmp" in mounts and "emptyDir" in volumes.get(mounts["/tmp"], {}), \
        f"{name}: a read-only root needs /tmp mounted from an emptyDir (mounts {mounts}, volumes {sorted(volumes)})"
    env = {e["name"]: e.get("value") for e in container.get("env", [])}
    for variable in ("HOME", "TMPDIR", "XDG_CACHE_HOME", "POCL_CACHE_DIR", "MESA_SHADER_CACHE_DIR"):
        assert str(env.get(variable, "")).startswith("/tmp"), f"{name}: {variable}={env.get(variable)!r} is not under /tmp"
    assert "HETRT_NUM_THREADS" not in env, f"{name}: HETRT_NUM_THREADS by hand: hetrt reads the CPU limit itself"
    startup, liveness = container.get("startupProbe"), container.get("livenessProbe")
    assert startup and liveness, f"{name}: needs a startupProbe and a livenessProbe"
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 300, \
        f"{name}: the startup probe allows {startup['periodSeconds'] * startup['failureThreshold']} s to load; want >= 300"
    assert "initialDelaySeconds" not in liveness, f"{name}: the startup probe replaces the liveness probe's delay"


def gpus(spec):
    """The GPUs a runtime's container asks for (0: a CPU runtime)."""
    limits = spec["containers"][0].get("resources", {}).get("limits", {})
    return limits.get("nvidia.com/gpu", 0)


def check_gpu(name, spec, runtimes):
    """What a GPU node pool needs of a runtime, and that it matches its CPU twin."""
    container = spec["containers"][0]
    resources = container.get("resources", {})
    count = resources["limits"]["nvidia.com/gpu"]
    assert re.fullmatch(r"[1-9][0-9]*", str(count)), f"{name}: nvidia.com/gpu {count!r} is not a whole number of GPUs"
    requested = resources.get("requests", {}).get("nvidia.com/gpu")
    assert requested in (None, count), f"{name}: nvidia.com/gpu requests {requested} but limits {count}"
    tolerations = spec.get("tolerations", [])
    assert any(t.get("key") == "nvidia.com/gpu" and t.get("effect") == "NoSchedule" and
               (t.get("operator") == "Exists" or "value" in t) for t in tolerations), \
        f"{name}: no toleration of the GPU pool's nvidia.com/gpu NoSchedule taint ({tolerations})"
    node_affinity = spec.get("affinity", {}).get("nodeAffinity", {})
    assert spec.get("nodeSelector") or node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution"), \
        f"{name}: no nodeSelector or required node affinity: GPU pods could be placed on any node"
    assert not any(f.get("autoSelect") for f in spec["supportedModelFormats"]), \
        f"{name}: a GPU runtime is autoSelect: services without a runtime would take GPUs"
    env = {e["name"]: e.get("value") for e in container.get("env", [])}
    assert "compute" in str(env.get("NVIDIA_DRIVER_CAPABILITIES", "")).split(","), \
        f"{name}: NVIDIA_DRIVER_CAPABILITIES={env.get('NVIDIA_DRIVER_CAPABILITIES')!r} lacks compute (libcuda)"
    twin_name = name.replace("-gpu", "", 1)
    twin = runtimes.get(twin_name)
    assert twin is not None and twin_name != name, f"{name}: no CPU runtime {twin_name!r} to match"
    assert not gpus(twin), f"{twin_name}: the CPU twin of {name} asks for GPUs"
    twin_container = twin["containers"][0]
    for field in ("image", "command", "args", "ports", "securityContext", "volumeMounts", "startupProbe",
                  "livenessProbe", "readinessProbe"):
        assert container.get(field) == twin_container.get(field), \
            f"{name}: {field} differs from {twin_name}'s: {container.get(field)} != {twin_container.get(field)}"
    for field in ("protocolVersions", "annotations", "volumes"):
        assert spec.get(field) == twin.get(field), f"{name}: {field} differs from {twin_name}'s"
    twin_env = {e["name"]: e.get("value") for e in twin_container.get("env", [])}
    assert {k: v for k, v in env.items() if not k.startswith("NVIDIA_")} == twin_env, \
        f"{name}: env differs from {twin_name}'s beyond NVIDIA_*: {env} != {twin_env}"


def check_runtime(hetrt, name, spec, repository):
    container = spec["containers"][0]
    args = list(container["args"])
    ports = {int(p) for a in args for p in re.findall(r"^--\w+-port=(\d+)$", a)}
    moved = {p: server_process.free_port() for p in ports}  # the manifest's port -> a free one here
    command = [hetrt if c == "hetrt" else c for c in container["command"]]
    for i, a in enumerate(args):
        m = re.match(r"^(--\w+-port=)(\d+)$", a)
        if m:
            args[i] = m.group(1) + str(moved[int(m.group(2))])
        elif a.startswith("--model-repository="):
            args[i] = "--model-repository=" + repository
    env = dict(os.environ, **{e["name"]: str(e["value"]) for e in container.get("env", [])})
    proc = subprocess.Popen(command + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    listening, log = {}, []
    try:
        deadline = time.monotonic() + 60
        while len(listening) < 3 and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                raise AssertionError(f"{name}: hetrt exited before listening:\n" + "".join(log))
            log.append(line)
            m = server_process.LISTENING.match(line.strip())
            if m:
                listening[int(m.group(3))] = m.group(1)
        threading.Thread(target=lambda: [log.append(x) for x in proc.stdout], daemon=True).start()
        assert len(listening) == 3, f"{name}: listeners {listening}\n" + "".join(log)

        def here(port):  # the manifest's port, as moved for this run
            assert int(port) in moved, f"{name}: port {port} is not one the args open ({sorted(moved)})"
            return moved[int(port)]

        # The port the ingress routes to speaks what its name says.
        expected = {"http1": "http", "h2c": "grpc"}
        for port in container["ports"]:
            kind = listening.get(here(port["containerPort"]))
            assert kind == expected[port["name"]], \
                f"{name}: containerPort {port['containerPort']} ({port['name']}) is hetrt's {kind} listener"
            address = f"127.0.0.1:{here(port['containerPort'])}"
            if kind == "http":  # add3 = a + b + c on ones: every element 3
                _, text = http_get(here(port["containerPort"]), "/v2/models/add3")
                inputs = [{"name": i["name"], "shape": i["shape"], "datatype": i["datatype"],
                           "data": [1.0] * prod(i["shape"])} for i in json.loads(text)["inputs"]]
                req = urllib.request.Request(f"http://{address}/v2/models/add3/infer",
                                             data=json.dumps({"inputs": inputs}).encode(),
                                             headers={"Content-Type": "application/json"})
                with urllib.request.urlopen(req, timeout=30) as r:
                    out = json.loads(r.read())["outputs"][0]["data"]
                assert out and all(v == 3.0 for v in out), out
            else:
                answer = server_process.grpc_health(address)
                assert answer == server_process.SERVING, f"{name}: gRPC health on {port['name']} answered {answer!r}"
        for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
            get = container[probe]["httpGet"]
            status, _ = http_get(here(get["port"]), get["path"])
            assert status == 200, f"{name}: {probe} {get['path']} answered {status}"
        annotations = spec.get("annotations", {})
        status, text = http_get(here(annotations["prometheus.kserve.io/port"]), annotations["prometheus.kserve.io/path"])
        assert status == 200 and "hetrt_" in text, f"{name}: metrics annotation does not reach hetrt's metrics"
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        code = proc.wait(60)
    assert code == 0, f"{name}: exit {code} after SIGTERM:\n" + "".join(log)
    print(f"{name}: ports {sorted(moved)}, probes, metrics, inference and drain as declared")


def main(hetrt, directory):
    if not os.path.isdir(os.path.join(FIXTURES, "add3")):
        return server_process.missing_fixtures(FIXTURES)
    docs = load_manifests(directory)
    runtimes = {d["metadata"]["name"]: d["spec"] for _, d in docs if d["kind"] == "ServingRuntime"}
    services = [(f, d) for f, d in docs if d["kind"] == "InferenceService"]
    assert runtimes and services, f"no ServingRuntime or InferenceService under {directory}"
    for f, d in services:
        model = d["spec"]["predictor"]["model"]
        runtime = runtimes.get(model["runtime"])
        assert runtime, f"{f}: runtime {model['runtime']} is not declared ({sorted(runtimes)})"
        assert model["protocolVersion"] in runtime["protocolVersions"], f"{f}: protocol {model['protocolVersion']}"
        formats = [m["name"] for m in runtime["supportedModelFormats"]]
        assert model["modelFormat"]["name"] in formats, f"{f}: format {model['modelFormat']['name']}"
        if gpus(runtime):  # the NVIDIA container runtime mounts the driver into the pod
            assert d["spec"]["predictor"].get("runtimeClassName"), \
                f"{f}: {d['metadata']['name']} runs on GPU runtime {model['runtime']} without a runtimeClassName"
    assert any(gpus(spec) for spec in runtimes.values()), f"no GPU ServingRuntime under {directory}"
    repository = server_process.fixture_repository(FIXTURES, {"add3": ("add3", ["deploy.so"], None)})
    for name, spec in runtimes.items():
        check_restricted(name, spec)
        if gpus(spec):
            check_gpu(name, spec, runtimes)
        # A GPU runtime's pod serves here too: the CUDA plugin finds no GPU
        # (or this machine's) and the CPU model is served as on a GPU node.
        check_runtime(hetrt, name, spec, repository)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
