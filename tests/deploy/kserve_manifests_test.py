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
    repository = server_process.fixture_repository(FIXTURES, {"add3": ("add3", ["deploy.so"], None)})
    for name, spec in runtimes.items():
        check_restricted(name, spec)
        check_runtime(hetrt, name, spec, repository)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
