"""`hetrt serve` as a process: SIGTERM while requests are in flight loses none
of them, reports not ready (REST) and NOT_SERVING (gRPC health) while they
finish, and exits 0; the listeners print their lines; /metrics counts what was
served; dynamic batching through REST returns the unbatched rows; a burst of new
connections is accepted whole; a client that keeps sending does not hold the
drain; every listener's accept backlog holds a burst; `--scheduling` sets the
policy of every thread of the server.

Usage: serve_lifecycle_test.py HETRT MAKE_BATCH_MODEL  (fixtures from $HETRT_FIXTURES)
"""
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_process import (NOT_SERVING, SERVING, Server, fixture_repository,  # noqa: E402
                            grpc_health, in_flight, missing_fixtures)

FAILURES = []


def check(condition, message):
    if not condition:
        FAILURES.append(message)
        print("FAIL:", message, flush=True)


def infer_json(address, model, inputs, timeout=60):
    """POST a v2 JSON inference request; returns (status, body dict)."""
    host, port = address.rsplit(":", 1)
    body = {"inputs": [{"name": n, "shape": list(a.shape), "datatype": "FP32", "data": a.flatten().tolist()}
                       for n, a in inputs.items()]}
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    conn.request("POST", f"/v2/models/{model}/infer", json.dumps(body), {"Content-Type": "application/json"})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, json.loads(data) if data else {}


def infer_binary(address, model, inputs, timeout=60):
    """POST with the binary tensor extension (outputs as JSON); returns (status, body dict)."""
    host, port = address.rsplit(":", 1)
    header = json.dumps({"inputs": [{"name": n, "shape": list(a.shape), "datatype": "FP32",
                                     "parameters": {"binary_data_size": a.nbytes}} for n, a in inputs.items()]})
    body = header.encode() + b"".join(a.astype("<f4").tobytes() for a in inputs.values())
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    conn.request("POST", f"/v2/models/{model}/infer", body,
                 {"Content-Type": "application/octet-stream", "Inference-Header-Content-Length": str(len(header))})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, json.loads(data) if data else {}


def get(address, path):
    host, port = address.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.request("GET", path)
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, data.decode()


def output_array(body, index=0):
    out = body["outputs"][index]
    return np.array(out["data"], dtype=np.float32).reshape(out["shape"])


def add_batch_model(repo, model, make_batch_model, config=None):
    """`model` version 1 in `repo`: the batch-4 model make_batch_model builds, with `config`."""
    version = os.path.join(repo, model, "1")
    os.makedirs(version)
    subprocess.check_call([make_batch_model, version], stdout=subprocess.DEVNULL)
    if config:
        with open(os.path.join(repo, model, "config.json"), "w") as f:
            json.dump(config, f)


def sigterm_in_flight(hetrt, fixtures, make_batch_model):
    """Ten slow requests (one instance, resnet18, ~50 ms a run) and one row that
    a batch-4 model holds for its 3 s queue delay; SIGTERM once all are accepted
    (queued or running). While they finish, the server drains as Kubernetes
    expects: gRPC health NOT_SERVING, /v2/health/ready 503, still live, new
    requests 503. All are answered, and the server exits 0."""
    resnet = os.path.join(fixtures, "resnet18")
    repo = fixture_repository(fixtures, {"resnet": ("resnet18", ["deploy.so"], None)})
    # The held row keeps the drain open for seconds on any machine, however fast.
    add_batch_model(repo, "held", make_batch_model,
                    {"max_batch_size": 4, "dynamic_batching": {"max_queue_delay_microseconds": 3000000}})
    data = np.load(os.path.join(resnet, "inputs_data.npy"))
    expected = np.load(os.path.join(resnet, "output_0.npy"))
    server = Server(hetrt, repo)
    check(grpc_health(server.grpc) == SERVING, "gRPC health is not SERVING before SIGTERM")
    status, meta = get(server.http, "/v2/models/held")
    held_input = json.loads(meta)["inputs"][0]["name"] if status == 200 else "?"
    held = []
    holder = threading.Thread(target=lambda: held.append(
        infer_json(server.http, "held", {held_input: np.ones((1, 32), dtype=np.float32)})))
    holder.start()
    results = []
    count = 10

    def client():
        results.append(infer_binary(server.http, "resnet", {"data": data}))

    threads = [threading.Thread(target=client) for _ in range(count)]
    for t in threads:
        t.start()
    # Wait until the server has all of them (queued or running), then stop it.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if in_flight(server.metrics, "resnet") >= count and in_flight(server.metrics, "held") >= 1:
            break
        time.sleep(0.005)
    else:
        check(False, f"{count} + 1 requests never were in flight at once")
    server.proc.send_signal(signal.SIGTERM)
    # The drain, seen from outside while the requests finish.
    deadline = time.monotonic() + 10
    health = grpc_health(server.grpc)
    while health != NOT_SERVING and time.monotonic() < deadline:
        health = grpc_health(server.grpc)
    check(health == NOT_SERVING, f"gRPC health answered {health!r} while draining, expected NOT_SERVING")
    check(get(server.http, "/v2/health/ready")[0] == 503, "/v2/health/ready is not 503 while draining")
    check(get(server.http, "/v2/health/live")[0] == 200, "/v2/health/live is not 200 while draining")
    code, body = infer_binary(server.http, "resnet", {"data": data})
    check(code == 503 and "shutting down" in body.get("error", ""),
          f"a new request while draining got {code} {body}, expected 503 'the server is shutting down'")
    check(in_flight(server.metrics, "held") > 0,
          "the held row was answered before the drain was checked: the checks above proved nothing")
    # stop() sends SIGTERM again if the server still runs: a second signal during
    # the drain must not kill it (every thread blocks it; only sigwait takes it).
    status = server.stop()
    for t in threads + [holder]:
        t.join(60)
    check(len(held) == 1 and held[0][0] == 200 and output_array(held[0][1]).shape == (1, 32),
          f"the held row was not answered whole: {held}")
    check(status == 0, f"hetrt serve exited {status} after SIGTERM, expected 0")
    check(len(results) == count, f"{len(results)} of {count} in-flight requests were answered")
    for code, body in results:
        check(code == 200, f"an in-flight request got {code}: {body}")
        if code == 200:
            check(np.allclose(output_array(body), expected, atol=1e-5), "resnet18 output differs from TVM's")
    # Nothing of this server listens any more. Another test's server (ctest runs
    # them side by side) may have been given the freed port since: only an
    # answer that knows this repository's "held" model would be this server's.
    try:
        code, _ = get(server.http, "/v2/models/held/ready")
        check(code != 200, "the HTTP port still serves this repository after the server exited")
    except OSError:
        pass
    check(any("SIGTERM: finishing requests in flight" in l for l in server.log), "no drain line in the log")
    shutil.rmtree(repo)


def batching_over_rest(hetrt, make_batch_model):
    """Eight concurrent one-row requests to a batch-4 model: each gets the row an unbatched run gives."""
    root = fixture_repository("/", {})
    for model, config in (("plain", None),
                          ("batched", {"max_batch_size": 4,
                                       "dynamic_batching": {"max_queue_delay_microseconds": 2000000}})):
        add_batch_model(root, model, make_batch_model, config)
    with Server(hetrt, root) as server:
        status, meta = get(server.http, "/v2/models/batched")
        check(status == 200, f"metadata: {status}")
        meta = json.loads(meta)
        name = meta["inputs"][0]["name"]
        check(meta["inputs"][0]["shape"] == [-1, 32], f"batched input shape {meta['inputs'][0]['shape']}")
        rows = np.sin(np.arange(8 * 32, dtype=np.float32) * 0.37).reshape(8, 32).astype(np.float32)
        expected = np.concatenate([output_array(infer_json(server.http, "plain", {name: rows[i:i + 4]})[1])
                                   for i in (0, 4)])
        got = [None] * 8

        def client(i):
            got[i] = infer_json(server.http, "batched", {name: rows[i:i + 1]})

        threads = [threading.Thread(target=client, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        for i, (code, body) in enumerate(got):
            check(code == 200, f"row {i}: {code} {body}")
            if code == 200:
                check(np.allclose(output_array(body), expected[i:i + 1], atol=1e-5), f"row {i} differs from unbatched")
        status, text = get(server.metrics, "/metrics")
        check(status == 200, f"/metrics: {status}")
        batched = [l for l in text.splitlines()
                   if l.startswith('hetrt_inference_executions_total{model="batched"') and 'batch_size="1"' not in l]
        check(batched, "no execution carried more than one row:\n" + text)
        check('hetrt_inference_requests_total{model="batched",version="1",status="success"} 8' in text,
              "metrics do not count 8 successes")
    shutil.rmtree(root)


def simultaneous_connections(hetrt, fixtures):
    """64 clients connect at the same instant (a burst a load balancer sends):
    every one is accepted and answered (httplib's own listen backlog is 5)."""
    repo = fixture_repository(fixtures, {"add3": ("add3", ["deploy.so"], None)})
    with Server(hetrt, repo) as server:
        host, port = server.http.rsplit(":", 1)
        barrier = threading.Barrier(64)
        codes = []

        def client():
            barrier.wait()
            try:
                conn = http.client.HTTPConnection(host, int(port), timeout=20)
                conn.request("GET", "/v2/health/ready")
                codes.append(conn.getresponse().status)
                conn.close()
            except OSError as e:
                codes.append(repr(e))

        threads = [threading.Thread(target=client) for _ in range(64)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        bad = [c for c in codes if c != 200]
        check(len(codes) == 64 and not bad, f"{len(codes)} answers, not 200: {bad[:5]}")
    shutil.rmtree(repo)


def chatty_client_does_not_hold_the_drain(hetrt, fixtures):
    """A client that keeps sending on one keep-alive connection (as one retrying
    a draining server's 503s would) must not keep the server from exiting: it
    stops within its grace (6 s), and exits 0."""
    repo = fixture_repository(fixtures, {"mlp": ("mlp", ["deploy.so"], None)})
    server = Server(hetrt, repo)
    host, port = server.http.rsplit(":", 1)
    stop_at = time.monotonic() + 60
    answers = []

    def chatty():
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
        try:
            while time.monotonic() < stop_at:
                conn.request("GET", "/v2/health/ready")
                response = conn.getresponse()
                response.read()
                answers.append(response.status)
        except (OSError, http.client.HTTPException):
            pass  # the server closed the connection: what this test wants
        conn.close()

    thread = threading.Thread(target=chatty, daemon=True)
    thread.start()
    while len(answers) < 10 and time.monotonic() < stop_at:
        time.sleep(0.01)
    start = time.monotonic()
    try:
        status = server.stop(timeout=20)
        check(status == 0, f"hetrt serve exited {status} with a chatty client, expected 0")
        check(time.monotonic() - start < 15, "hetrt serve took more than 15 s to stop with a chatty client")
    except RuntimeError as e:
        check(False, f"a client sending on a keep-alive connection held the drain: {e}")
    check(200 in answers and 503 in answers, "the chatty client never saw the server ready, then draining (503)")
    thread.join(5)
    shutil.rmtree(repo)


def listen_backlogs(hetrt, fixtures):
    """Each listener's accept queue holds a burst of new connections: httplib
    listens with a backlog of 5 unless told otherwise, and under full load
    bursts of 16 clients then lost requests. ss reports a listening socket's
    backlog as its Send-Q."""
    repo = fixture_repository(fixtures, {"mlp": ("mlp", ["deploy.so"], None)})
    with open("/proc/sys/net/core/somaxconn") as f:
        wanted = min(128, int(f.read()))
    with Server(hetrt, repo) as server:
        for protocol, address in sorted(server.address.items()):
            port = address.rsplit(":", 1)[1]
            try:
                out = subprocess.run(["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True,
                                     check=True).stdout.split()
            except (OSError, subprocess.CalledProcessError) as e:
                check(False, f"ss (iproute2, installed by scripts/setup.sh) cannot list listeners: {e}")
                break
            check(len(out) >= 3 and out[0] == "LISTEN", f"ss shows no listener on the {protocol} port {port}: {out}")
            if len(out) >= 3:
                check(int(out[2]) >= wanted, f"the {protocol} listener's backlog is {out[2]}, expected >= {wanted}")
    shutil.rmtree(repo)


def thread_policies(pid):
    """{thread name: set of scheduling policies} of a process, from /proc (stat field 41)."""
    policies = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                stat = f.read()
        except FileNotFoundError:
            continue  # a thread that ended meanwhile
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        policies.setdefault(name, set()).add(int(stat[stat.rindex(")") + 1:].split()[38]))
    return policies


def scheduling_policies(hetrt, fixtures):
    """--scheduling batch (the default) runs every thread of the server SCHED_BATCH
    (3): the main thread, gRPC's, the HTTP workers, the instance threads and the
    CPU pool's, all started after the choice; --scheduling default leaves them
    SCHED_OTHER (0) when no model has several instances."""
    repo = fixture_repository(fixtures, {"mlp": ("mlp", ["deploy.so"], None)})
    request = {"data": np.zeros((1, 784), dtype=np.float32)}
    for flags, wanted in (((), {3}), (("--scheduling", "default"), {0})):
        with Server(hetrt, repo, extra_args=flags) as server:
            status, _ = infer_binary(server.http, "mlp", request)  # the instance thread has started
            check(status == 200, f"mlp answered {status} with {flags}")
            policies = thread_policies(server.proc.pid)
            check("hetrt-instance" in policies, f"no instance thread among {sorted(policies)}")
            for name, seen in sorted(policies.items()):
                check(seen == wanted, f"{flags or 'default flags'}: thread {name!r} runs policies {sorted(seen)}, "
                      f"expected {sorted(wanted)}")
    shutil.rmtree(repo)


def main():
    hetrt, make_batch_model = sys.argv[1], sys.argv[2]
    fixtures = os.path.join(os.environ.get("HETRT_FIXTURES",
                                           os.path.join(os.path.dirname(__file__), "../../../shared/fixtures")),
                            "tvm-0.18")
    if not os.path.isdir(os.path.join(fixtures, "resnet18")):
        return missing_fixtures(fixtures)
    sigterm_in_flight(hetrt, fixtures, make_batch_model)
    batching_over_rest(hetrt, make_batch_model)
    simultaneous_connections(hetrt, fixtures)
    chatty_client_does_not_hold_the_drain(hetrt, fixtures)
    listen_backlogs(hetrt, fixtures)
    scheduling_policies(hetrt, fixtures)
    print(f"{len(FAILURES)} failure(s)")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
