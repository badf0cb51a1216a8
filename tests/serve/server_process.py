"""Starts `hetrt serve` for a test and reads the ports it listens on.

Used by every serving test (Python clients, and as a launcher for curl and
Node clients): `python3 server_process.py HETRT REPO -- CMD...` starts the
server on free ports, runs CMD with HETRT_HTTP/HETRT_GRPC/HETRT_METRICS set to
HOST:PORT, then sends SIGTERM and requires a clean exit (status 0).
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

LISTENING = re.compile(r"^hetrt serve: (http|grpc|metrics) listening on (\S+):(\d+)$")


class Server:
    def __init__(self, hetrt, repository, extra_args=(), timeout=60.0, env=None, launcher=()):
        # launcher: a command the server runs under (["taskset", "-c", "1"]).
        self.args = [*launcher, hetrt, "serve", "--model-repository", repository,
                     "--http-port", "0", "--grpc-port", "0", "--metrics-port", "0", *extra_args]
        self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, bufsize=1, env=env)
        self.address = {}
        self.log = []
        deadline = time.monotonic() + timeout
        while len(self.address) < 3:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("hetrt serve exited before listening:\n" + "".join(self.log))
            self.log.append(line)
            m = LISTENING.match(line.strip())
            if m:
                self.address[m.group(1)] = f"{m.group(2)}:{m.group(3)}"
            if time.monotonic() > deadline:
                self.proc.kill()
                raise RuntimeError("hetrt serve did not listen within %.0f s" % timeout)
        # Keep draining its output so the server never blocks on a full pipe.
        import threading
        self._drainer = threading.Thread(target=self._drain, daemon=True)
        self._drainer.start()

    def _drain(self):
        with self.proc.stdout:
            for line in self.proc.stdout:
                self.log.append(line)

    @property
    def http(self):
        return self.address["http"]

    @property
    def grpc(self):
        return self.address["grpc"]

    @property
    def metrics(self):
        return self.address["metrics"]

    def stop(self, timeout=60.0):
        """SIGTERM, then the exit status (0 expected)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            status = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise RuntimeError("hetrt serve did not exit within %.0f s of SIGTERM" % timeout)
        self._drainer.join(timeout)  # the whole log, and its pipe closed
        return status

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        status = self.stop()
        if exc[0] is None and status != 0:
            raise RuntimeError("hetrt serve exited with %d:\n%s" % (status, "".join(self.log)))


def rest_json(address, method, path, body=None):
    """One REST call with a JSON body to host:port; (status, decoded JSON or None)."""
    import http.client
    import json
    conn = http.client.HTTPConnection(*address.rsplit(":", 1), timeout=60)
    conn.request(method, path, body=None if body is None else json.dumps(body),
                 headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    payload = response.read()
    conn.close()
    return response.status, json.loads(payload) if payload else None


def fixture_repository(fixtures, layout):
    """A temporary Triton-layout repository: {model: (fixture_dir, files, config or None)}.

    files: names inside the fixture folder linked into <model>/1/.
    """
    root = tempfile.mkdtemp(prefix="hetrt-repo-")
    for model, (fixture, files, config) in layout.items():
        version = os.path.join(root, model, "1")
        os.makedirs(version)
        for f in files:
            os.symlink(os.path.join(fixtures, fixture, f), os.path.join(version, f))
        if config is not None:
            import json
            with open(os.path.join(root, model, "config.json"), "w") as out:
                json.dump(config, out)
    return root


# grpc.health.v1.Health/Check answers on "" (the whole server), raw: Debian
# packages no health stubs; the empty request is b"" and the status is field 1.
SERVING, NOT_SERVING = b"\x08\x01", b"\x08\x02"


def grpc_health(address):
    """The raw answer of grpc.health.v1.Health/Check on "" at `address`, or
    "CODE: details" when the call fails (a refused call is an answer too)."""
    import grpc
    with grpc.insecure_channel(address) as channel:
        try:
            return channel.unary_unary("/grpc.health.v1.Health/Check")(b"", timeout=10)
        except grpc.RpcError as e:
            return f"{e.code()}: {e.details()}"


def read_param_dict(path):
    """TVM's param dict (tvm-formats.md (c)): {name: numpy array}; float32/int only."""
    import numpy as np
    import struct
    with open(path, "rb") as f:
        data = f.read()
    at = 16  # magic, reserved
    count, = struct.unpack_from("<Q", data, at)
    at += 8
    names = []
    for _ in range(count):
        n, = struct.unpack_from("<Q", data, at)
        names.append(data[at + 8:at + 8 + n].decode())
        at += 8 + n
    at += 8  # the arrays' count
    out = {}
    for name in names:
        at += 16 + 8  # NDArray magic, reserved, device
        ndim, code, bits, _lanes = struct.unpack_from("<iBBH", data, at)
        at += 8
        shape = struct.unpack_from("<%dq" % ndim, data, at)
        at += 8 * ndim
        nbytes, = struct.unpack_from("<q", data, at)
        at += 8
        dtype = {(2, 32): "<f4", (0, 32): "<i4", (0, 64): "<i8"}[(code, bits)]
        out[name] = np.frombuffer(data[at:at + nbytes], dtype=dtype).reshape(shape)
        at += nbytes
    return out


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def metric(metrics_address, name, model, **labels):
    """The samples of `name` for `model` (and the given labels) on /metrics, summed; 0 where there is none."""
    import http.client
    host, port = metrics_address.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.request("GET", "/metrics")
    text = conn.getresponse().read().decode()
    conn.close()
    wanted = [f'model="{model}"'] + [f'{key}="{value}"' for key, value in labels.items()]
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + "{"):
            given = line[len(name) + 1:line.rindex("}")].split(",")
            if all(label in given for label in wanted):
                total += float(line.split()[-1])
    return total


def in_flight(metrics_address, model):
    """hetrt_inference_in_flight of `model` (requests queued or running) from /metrics."""
    return metric(metrics_address, "hetrt_inference_in_flight", model)


def copied_bytes(metrics_address, model):
    """(input, output) bytes the instances of `model` copied between requests and their executors, from /metrics."""
    return tuple(metric(metrics_address, "hetrt_instance_copied_bytes_total", model, direction=d)
                 for d in ("input", "output"))


def missing_fixtures(root):
    """Exit status for a test whose fixtures are not under `root`: 77 (ctest's
    SKIP_RETURN_CODE) unless HETRT_REQUIRE asks for fixtures ("all" in CI), then 1."""
    required = os.environ.get("HETRT_REQUIRE", "").split(",")
    print(f"fixtures not found under {root} (set HETRT_FIXTURES)", file=sys.stderr)
    return 1 if ("all" in required or "fixtures" in required) and "-fixtures" not in required else 77


def main(argv):
    if "--" not in argv or len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    split = argv.index("--")
    hetrt, repository, *extra = argv[1:split]
    command = argv[split + 1:]
    with Server(hetrt, repository, extra) as server:
        env = dict(os.environ, HETRT_HTTP=server.http, HETRT_GRPC=server.grpc, HETRT_METRICS=server.metrics)
        status = subprocess.call(command, env=env)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
