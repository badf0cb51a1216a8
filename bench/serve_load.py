#!/usr/bin/env python3
"""hetrt serve against the protocol floor, driven by h2load (nghttp2-client).

Starts `hetrt serve` on one fixture model and bench/protocol_floor_server
answering the same requests without a model, then drives each with the same
h2load runs: REST (HTTP/1.1 keep-alive, --h1; the binary extension and JSON)
and gRPC (HTTP/2: length-prefixed ModelInferRequest bodies, content-type
application/grpc, te: trailers), at each concurrency. Per server, protocol and
concurrency it reports requests/s, p50/p99 latency (h2load's per-request log)
and the server process's CPU time per request (user + system from
/proc/<pid>/stat over the measured window), and hetrt's figures as ratios of
the floor's measured in the same run.

Usage: serve_load.py --hetrt build/bin/hetrt --floor build/bin/protocol_floor_server
         [--model mlp] [--seconds 4] [--concurrency 1,4,16,64]
         [--protocols grpc,rest-binary,rest-json] [--json OUT]
         [--rounds N]  (floor and hetrt alternate N times per protocol and
                        concurrency, each round in the other order; the
                        report gives the median ratio and the range)
         [--model-dir DIR]  (a folder with the model's deploy.so instead of the fixture:
                             build/bin/make_bench_model large_relu DIR for 6 MiB
                             tensors, small_relu DIR for a model of next to no cost,
                             whose ratios show what the server itself adds)
Fixtures from $HETRT_FIXTURES (default <repo>/../shared/fixtures). Reports MB/s
(request and response bytes) beside requests/s."""
import argparse
import importlib
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "serve"))
import server_process  # noqa: E402  (starts hetrt serve on free ports)

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
ELEMENT_BYTES = {"FP32": 4, "FP64": 8, "INT64": 8, "INT32": 4, "FP16": 2, "INT8": 1, "UINT8": 1, "BOOL": 1}


def cpu_seconds(pid):
    """User + system time of the whole process (every thread), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime


def get_json(address, path):
    with urllib.request.urlopen(f"http://{address}{path}", timeout=10) as r:
        return json.loads(r.read())


def grpc_messages(work):
    """grpc_service_pb2, made by protoc from the project's .proto."""
    subprocess.check_call(["protoc", "-I", os.path.join(ROOT, "serve", "proto"), "--python_out=" + work,
                           "grpc_service.proto"])
    sys.path.insert(0, work)
    return importlib.import_module("grpc_service_pb2")


def make_requests(model, metadata, work):
    """Request bodies for each protocol, and the input bytes one carries."""
    inputs = []
    for i in metadata["inputs"]:
        shape = [max(1, d) for d in i["shape"]]  # a symbolic dimension: one row
        count = 1
        for d in shape:
            count *= d
        inputs.append((i["name"], i["datatype"], shape, count))
    input_bytes = sum(count * ELEMENT_BYTES[dt] for _, dt, _, count in inputs)
    bodies = {}
    bodies["rest-json"] = json.dumps({"inputs": [
        {"name": n, "datatype": dt, "shape": shape, "data": [0.5] * count} for n, dt, shape, count in inputs]}).encode()
    header = json.dumps({"inputs": [
        {"name": n, "datatype": dt, "shape": shape, "parameters": {"binary_data_size": count * ELEMENT_BYTES[dt]}}
        for n, dt, shape, count in inputs], "parameters": {"binary_data_output": True}}).encode()
    bodies["rest-binary"] = header + b"\0" * input_bytes
    pb = grpc_messages(work)
    request = pb.ModelInferRequest(model_name=model)
    for n, dt, shape, count in inputs:
        tensor = request.inputs.add(name=n, datatype=dt)
        tensor.shape.extend(shape)
        request.raw_input_contents.append(b"\0" * (count * ELEMENT_BYTES[dt]))
    message = request.SerializeToString()
    bodies["grpc"] = struct.pack(">BI", 0, len(message)) + message  # gRPC's length-prefixed message
    paths = {}
    for protocol, body in bodies.items():
        paths[protocol] = os.path.join(work, protocol + ".body")
        with open(paths[protocol], "wb") as f:
            f.write(body)
    return paths, input_bytes, len(header), pb


def check_grpc(address, model, body_path, pb):
    """One call through grpcio with the very bytes h2load sends: h2load sees HTTP 200 only, not grpc-status."""
    import grpc
    with open(body_path, "rb") as f:
        message = f.read()[5:]
    limits = [("grpc.max_receive_message_length", 256 << 20), ("grpc.max_send_message_length", 256 << 20)]
    with grpc.insecure_channel(address, options=limits) as channel:
        call = channel.unary_unary("/inference.GRPCInferenceService/ModelInfer",
                                   request_serializer=lambda m: m, response_deserializer=pb.ModelInferResponse.FromString)
        response = call(message, timeout=10)
    if response.model_name != model:
        raise SystemExit(f"gRPC check at {address}: answered for model {response.model_name!r}")


def h2load(protocol, address, model, body, header_length, concurrency, seconds, log, launcher=()):
    args = [*launcher, "h2load", "-c", str(concurrency), "-m", "1", "-D", str(max(1, round(seconds))), "-d", body, "--log-file", log]
    if protocol == "grpc":
        args += ["-H", "content-type: application/grpc", "-H", "te: trailers",
                 f"http://{address}/inference.GRPCInferenceService/ModelInfer"]
    else:
        args += ["--h1", f"http://{address}/v2/models/{model}/infer"]
        if protocol == "rest-binary":
            args += ["-H", "content-type: application/octet-stream",
                     "-H", f"inference-header-content-length: {header_length}"]
        else:
            args += ["-H", "content-type: application/json"]
    if os.path.exists(log):
        os.remove(log)  # h2load appends to it
    try:
        run = subprocess.run(args, capture_output=True, text=True, timeout=seconds + 30)
    except subprocess.TimeoutExpired:
        return None  # a connection the server never answered
    out = run.stdout + run.stderr
    done = succeeded = 0
    for line in out.splitlines():
        if line.startswith("requests:"):
            words = line.replace(",", "").split()
            done, succeeded = int(words[words.index("done") - 1]), int(words[words.index("succeeded") - 1])
        if line.startswith("status codes:") and " 0 4xx, 0 5xx" not in line:
            raise SystemExit(f"h2load {protocol} at {address}: errors: {line}\n{out}")
    if succeeded == 0 or succeeded != done:
        raise SystemExit(f"h2load {protocol} at {address}: {succeeded} of {done} succeeded\n{out}")
    return succeeded


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(p / 100 * len(values)))]


def measure(server, pid, protocol, address, model, body, header_length, concurrency, seconds, work):
    log = os.path.join(work, "h2load.log")
    row = {"server": server, "protocol": protocol, "concurrency": concurrency}
    warm = h2load(protocol, address, model, body, header_length, concurrency, 1, log)
    cpu_before, start = cpu_seconds(pid), time.monotonic()
    succeeded = h2load(protocol, address, model, body, header_length, concurrency, seconds, log) if warm else None
    elapsed, cpu = time.monotonic() - start, cpu_seconds(pid) - cpu_before
    if succeeded is None:
        return dict(row, error=f"h2load did not finish: a connection {server} never answered")
    with open(log) as f:
        latencies = [int(line.split("\t")[2]) for line in f if line.strip()]
    return dict(row, requests=succeeded, requests_per_s=succeeded / elapsed, p50_us=percentile(latencies, 50),
                p99_us=percentile(latencies, 99), cpu_us_per_request=cpu * 1e6 / succeeded)


def summary_line(protocol, concurrency, pairs):
    """One line per protocol and concurrency: the last round's figures, then the ratios' median over rounds."""
    failed = [f"{name}: {row['error']}" for pair in pairs for name, row in pair.items() if "error" in row]
    if failed:
        return f"{protocol:11s} c={concurrency:<3d} " + "; ".join(failed)
    floor_row, hetrt_row = pairs[-1]["floor"], pairs[-1]["hetrt"]
    line = (f"{protocol:11s} c={concurrency:<3d} "
            f"floor {floor_row['requests_per_s']:8.0f} req/s p50 {floor_row['p50_us']:6d} us "
            f"p99 {floor_row['p99_us']:6d} us cpu {floor_row['cpu_us_per_request']:6.1f} us/req | "
            f"hetrt {hetrt_row['requests_per_s']:8.0f} req/s p50 {hetrt_row['p50_us']:6d} us "
            f"p99 {hetrt_row['p99_us']:6d} us cpu {hetrt_row['cpu_us_per_request']:6.1f} us/req | ")
    ratios = sorted(p["hetrt"]["requests_per_s"] / p["floor"]["requests_per_s"] for p in pairs)
    cpu = sorted(p["hetrt"]["cpu_us_per_request"] - p["floor"]["cpu_us_per_request"] for p in pairs)
    p50 = sorted(p["hetrt"]["p50_us"] - p["floor"]["p50_us"] for p in pairs)
    median = lambda values: values[len(values) // 2]  # noqa: E731  (odd rounds: the middle one)
    if len(pairs) == 1:
        return line + (f"throughput {ratios[0]:.2f}x ({floor_row['input_mb_per_s']:.0f} vs "
                       f"{hetrt_row['input_mb_per_s']:.0f} MB/s of inputs), cpu {cpu[0]:+.1f} us, p50 {p50[0]:+d} us")
    return line + (f"median of {len(pairs)} rounds: throughput {median(ratios):.2f}x ({ratios[0]:.2f}-{ratios[-1]:.2f}), "
                   f"cpu {median(cpu):+.1f} us ({cpu[0]:+.1f}..{cpu[-1]:+.1f}), "
                   f"p50 {median(p50):+d} us ({p50[0]:+d}..{p50[-1]:+d})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hetrt", required=True)
    parser.add_argument("--floor", required=True)
    parser.add_argument("--model", default="mlp")
    parser.add_argument("--seconds", type=int, default=4)
    parser.add_argument("--concurrency", default="1,4,16,64")
    parser.add_argument("--protocols", default="grpc,rest-binary,rest-json")
    parser.add_argument("--json")
    parser.add_argument("--model-dir")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    for tool in ("h2load", "protoc"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} not found: run scripts/setup.sh")
    fixtures = os.path.join(os.environ.get("HETRT_FIXTURES", os.path.join(ROOT, "..", "shared", "fixtures")),
                            "tvm-0.18")
    work = tempfile.mkdtemp(prefix="hetrt-serve-load-")
    if args.model_dir:
        fixtures, model_folder = os.path.split(os.path.abspath(args.model_dir))
    else:
        fixtures, model_folder = os.path.abspath(fixtures), args.model
    repo = server_process.fixture_repository(fixtures, {
        args.model: (model_folder, ["deploy.so"], {"instance_group": [{"count": 1}]})})
    rows = []
    with server_process.Server(args.hetrt, repo) as hetrt:
        metadata = get_json(hetrt.http, f"/v2/models/{args.model}")
        bodies, input_bytes, header_length, pb = make_requests(args.model, metadata, work)
        outputs = [f"{o['name']}:{o['datatype']}:{'x'.join(str(max(1, d)) for d in o['shape'])}"
                   for o in metadata["outputs"]]
        # One floor process per protocol: neither's threads count against the other.
        floor_http = f"127.0.0.1:{server_process.free_port()}"
        floor_grpc = f"127.0.0.1:{server_process.free_port()}"
        floor_args = [args.floor, "--model", args.model, "--input-bytes", str(input_bytes),
                      *[a for o in outputs for a in ("--output", o)]]
        floors = {"grpc": subprocess.Popen(floor_args + ["--grpc-port", floor_grpc.split(":")[1]],
                                           stdout=subprocess.DEVNULL),
                  "rest": subprocess.Popen(floor_args + ["--http-port", floor_http.split(":")[1]],
                                           stdout=subprocess.DEVNULL)}
        try:
            for _ in range(100):
                try:
                    urllib.request.urlopen(f"http://{floor_http}/v2/health/ready", timeout=1)
                    break
                except OSError:
                    time.sleep(0.05)
            time.sleep(0.5)  # the gRPC floor has no health service: give it the same start
            check_grpc(floor_grpc, args.model, bodies["grpc"], pb)
            check_grpc(hetrt.grpc, args.model, bodies["grpc"], pb)
            for protocol in args.protocols.split(","):
                floor = floors["grpc" if protocol == "grpc" else "rest"]
                servers = {"floor": (floor.pid, floor_grpc if protocol == "grpc" else floor_http),
                           "hetrt": (hetrt.proc.pid, hetrt.grpc if protocol == "grpc" else hetrt.http)}
                for concurrency in [int(c) for c in args.concurrency.split(",")]:
                    pairs = []
                    for round_index in range(args.rounds):
                        # A shared machine drifts within seconds: alternate who goes first.
                        order = list(servers.items()) if round_index % 2 == 0 else list(servers.items())[::-1]
                        pair = {}
                        for name, (pid, address) in order:
                            pair[name] = measure(name, pid, protocol, address, args.model, bodies[protocol],
                                                 header_length, concurrency, args.seconds, work)
                            pair[name]["round"] = round_index
                            if "requests_per_s" in pair[name]:
                                pair[name]["input_mb_per_s"] = pair[name]["requests_per_s"] * input_bytes / 1e6
                            rows.append(pair[name])
                        pairs.append(pair)
                    print(summary_line(protocol, concurrency, pairs), flush=True)
        finally:
            for floor in floors.values():
                floor.terminate()
                floor.wait(30)
    shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(repo, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"model": args.model, "seconds": args.seconds, "cpus": os.cpu_count(), "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
