#!/usr/bin/env python3
"""`hetrt serve` with a language model under load, against the engine in process.

The same mix three ways, rounds interleaved (medians reported):
  (a) the engine in process: hetrt.llm.Engine(dir).generate_batch(prompts,
      max_tokens) on one engine kept warm (tokens/s, and this process's CPU
      per token, Python's step loop included); or with --engine cli,
      `hetrt generate` with one --prompt-ids per prompt (a fresh process:
      cold; its steps' own times; CPU: the child's less its weight loading);
  (b) the unloaded time to first token: one streaming request alone, the
      median of --ttft-samples;
  (c) the server loaded: `hetrt serve` with the model, --concurrency streaming
      clients over http.client in threads (one connection each, connected
      first, all released together by a barrier) sending --requests requests:
      generated tokens/s over the wall time from the release to the last event,
      TTFT p50/p99, inter-token latency p50/p99, the server process's CPU time
      (utime + stime, /proc/PID/stat) per token over that window, and this
      client process's own CPU per token (its threads share the machine's cores
      with the server: the client reads lines and counts "data:" ones, parsing
      JSON of the last event only). TTFT and inter-token gaps are as this client
      sees them: events read in one burst (its threads waiting for the GIL or
      a core) show near-zero gaps; the server's own mean queue time and TTFT
      (from /metrics) are printed beside them.
The server's own cost per token: the server process's CPU over the loaded window,
per thread from /proc/PID/task/*/schedstat (nanoseconds), less the engine's (the CPU
plugin's worker threads, hetrt-cpu-*, and the scheduler threads' CPU inside engine
steps, which /metrics reports as hetrt_llm_engine_step_thread_cpu_seconds_total),
over the tokens generated. (Server CPU minus the engine's CPU in process is also
printed; it subtracts two noisy totals of ~400 us each.) The server runs with the
engine's CPU plugin settings by default (--cpu-settings).
Targets: server tok/s / engine tok/s >= 0.9; p99 TTFT / unloaded TTFT < 10;
server cost < 15 us/token.

Mix: --requests prompts of uniform length --min-prompt..--max-prompt (8..64)
with ids from a fixed seed (--seed), greedy, --max-tokens each (32): every
request generates exactly max_tokens (checked).

Usage (from the repository root, after building):
  python3 bench/llm_serve_load.py --hetrt build/bin/hetrt --json llm_serve_load.json
  [--fixtures DIR] [--requests 32] [--concurrency 32] [--max-tokens 32] [--rounds 3]
  [--ttft-samples 10] [--python-path build/python] [--config '{"max_batch_size": 4}']
  [--server-arg=--scheduling --server-arg=default]
The model: tvm-0.25-llm/tiny_llama under --fixtures ($HETRT_FIXTURES, default
<repo>/../shared/fixtures). The Python module: --python-path (default: the
`python` folder beside the binary's `bin`, i.e. build/python).
"""
import argparse
import asyncio
import http.client
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "serve"))
import server_process  # noqa: E402  (starts hetrt serve on free ports)

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
MODEL = "tiny_llama"
TARGETS = {"throughput_ratio": (">=", 0.9), "ttft_p99_ratio": ("<", 10.0), "server_own_us_per_token": ("<", 15.0)}


def cpu_seconds(pid):
    """User + system time of the whole process (every thread), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime


def thread_cpu_ns(pid):
    """{tid: (name, ns on a CPU)} from /proc/PID/task/*/schedstat (nanoseconds, unlike utime's ticks)."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                out[tid] = (name, int(f.read().split()[0]))
        except OSError:  # the thread ended meanwhile
            pass
    return out


def own_cpu_ns(before, after, step_thread_ns):
    """The server's own CPU over a window: every thread's, less the engine's (the CPU
    plugin's workers, hetrt-cpu-*, and the scheduler threads' time inside steps)."""
    total = pool = 0
    for tid, (name, ns) in after.items():
        spent = ns - before.get(tid, (name, 0))[1]
        total += spent
        if name.startswith("hetrt-cpu"):
            pool += spent
    return total - pool - step_thread_ns


def cpu_ns_by_thread_name(before, after):
    """{thread name, digits dropped: ns on a CPU over the window}: where the server's CPU went."""
    out = {}
    for tid, (name, ns) in after.items():
        key = re.sub(r"[0-9]+", "#", name)
        out[key] = out.get(key, 0) + ns - before.get(tid, (name, 0))[1]
    return out


def percentile(values, p):
    """Nearest rank."""
    values = sorted(values)
    return values[min(len(values) - 1, max(0, int(round(p / 100 * len(values))) - 1))]


def make_prompts(count, low, high, seed, vocab):
    rng = random.Random(seed)
    return [[rng.randrange(vocab) for _ in range(rng.randint(low, high))] for _ in range(count)]


# --- (a) the engine in process ---------------------------------------------------

class InProcessEngine:
    def __init__(self, model_dir, python_path):
        sys.path.insert(0, python_path)
        import hetrt.llm  # noqa: F401  (the built module: PYTHONPATH=build/python)
        self.engine = hetrt.llm.Engine(model_dir, device="cpu")
        self.what = "hetrt.llm.Engine.generate_batch (in process)"

    def run(self, prompts, max_tokens):
        wall, cpu = time.perf_counter(), time.process_time()
        out = self.engine.generate_batch(prompts, max_tokens=max_tokens)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        tokens = sum(len(o) for o in out)
        return {"tokens": tokens, "seconds": wall, "tokens_per_s": tokens / wall,
                "cpu_us_per_token": cpu / tokens * 1e6}


class CliEngine:
    """`hetrt generate` with every prompt: its steps' own times; CPU approximate."""

    def __init__(self, model_dir, hetrt):
        self.args = [hetrt, "generate", model_dir]
        self.what = "hetrt generate (CLI fallback: step times; CPU = child CPU - weight loading, approximate)"

    def run(self, prompts, max_tokens):
        args = list(self.args) + ["--max-tokens", str(max_tokens)]
        for p in prompts:
            args += ["--prompt-ids", ",".join(map(str, p))]
        before = os.times()
        out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
        after = os.times()
        child_cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
        tokens = sum(len(line.split(":", 1)[1].strip().split(",")) for line in out.splitlines()
                     if line.startswith("sequence ") and line.split(":", 1)[1].strip())
        load = float(re.search(r"loaded in ([0-9.]+) s", out).group(1))
        steps = re.search(r"steps: \d+ prefill \(\d+ tokens, ([0-9.]+) ms\), "
                          r"\d+ decode \((\d+) tokens, ([0-9.]+) tokens/s\)", out)
        prefill_s = float(steps.group(1)) / 1e3
        decode_tokens, rate = int(steps.group(2)), float(steps.group(3))
        seconds = prefill_s + (decode_tokens / rate if rate > 0 else 0.0)
        return {"tokens": tokens, "seconds": seconds, "tokens_per_s": tokens / seconds,
                "cpu_us_per_token": max(0.0, child_cpu - load) / tokens * 1e6}


# --- (b), (c) the server -----------------------------------------------------------

class Client:
    """One keep-alive connection; streams read lean: lines counted, last event parsed."""

    def __init__(self, address):
        host, port = address.rsplit(":", 1)
        self.conn = http.client.HTTPConnection(host, int(port), timeout=120)
        self.conn.connect()
        self.path = f"/v2/models/{MODEL}/generate_stream"
        self.headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}

    def stream(self, body):
        """(time sent, [time of each event], the last event's JSON) or raises."""
        clock = time.perf_counter
        sent = clock()
        self.conn.request("POST", self.path, body, self.headers)
        response = self.conn.getresponse()
        if response.status != 200:
            raise RuntimeError(f"HTTP {response.status}: {response.read()[:300]!r}")
        stamps = []
        last = b""
        readline = response.readline
        while True:
            line = readline()
            if not line:
                break
            if line.startswith(b"data:"):
                stamps.append(clock())
                last = line
        return sent, stamps, json.loads(last[5:]) if last else {}

    def close(self):
        self.conn.close()


def check_answer(stamps, last, max_tokens):
    got = last.get("usage", {}).get("completion_tokens")
    if last.get("finish_reason") != "length" or got != max_tokens or len(stamps) != max_tokens:
        raise RuntimeError(f"a stream ended with {len(stamps)} events, last {last}: expected {max_tokens} tokens")


def unloaded_ttft(address, prompts, max_tokens, samples):
    """Seconds to the first event of one stream alone, each on a connection made before."""
    ttfts = []
    for i in range(samples):
        client = Client(address)
        body = json.dumps({"input_ids": prompts[i % len(prompts)], "max_tokens": max_tokens}).encode()
        sent, stamps, last = client.stream(body)
        client.close()
        check_answer(stamps, last, max_tokens)
        ttfts.append(stamps[0] - sent)
    return statistics.median(ttfts)


def streams_from_threads(address, bodies, concurrency, open_window):
    """Each body streamed by one of `concurrency` threads (a connection each, made
    first), all released together once open_window() has run: a load client with a
    thread per stream, each asleep in recv until its next event."""
    clients = [Client(address) for _ in range(concurrency)]
    barrier = threading.Barrier(concurrency + 1)
    per_request = [None] * len(bodies)
    failures = []

    def work(j):
        try:
            barrier.wait(60)
            for i in range(j, len(bodies), concurrency):
                per_request[i] = clients[j].stream(bodies[i])
        except Exception as e:  # noqa: BLE001 (reported below)
            failures.append(repr(e))

    threads = [threading.Thread(target=work, args=(j,), daemon=True) for j in range(concurrency)]
    for t in threads:
        t.start()
    open_window()
    barrier.wait(60)
    for t in threads:
        t.join(300)
    for c in clients:
        c.close()
    if failures or any(r is None for r in per_request):
        raise SystemExit(f"the loaded run failed: {failures[:3]}")
    return per_request


async def stream_on(reader, writer, host, body):
    """One generate_stream request on a kept-alive connection, HTTP/1.1 read by hand:
    (time sent, [time of each event], the last event's JSON)."""
    clock = time.perf_counter
    sent = clock()
    writer.write(f"POST /v2/models/{MODEL}/generate_stream HTTP/1.1\r\nHost: {host}\r\n"
                 f"Content-Type: application/json\r\nAccept: text/event-stream\r\n"
                 f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
    status = await reader.readline()
    chunked = False
    while (line := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"transfer-encoding" and b"chunked" in value.lower():
            chunked = True
    if not status.startswith(b"HTTP/1.1 200") or not chunked:
        raise RuntimeError(f"answer {status!r} (chunked: {chunked})")
    stamps, last, pending = [], b"", b""
    while (size := int((await reader.readline()).split(b";")[0], 16)) > 0:
        pending += (await reader.readexactly(size + 2))[:-2]
        *lines, pending = pending.split(b"\n")  # SSE lines; a partial one waits for the next chunk
        now = clock()
        for line in lines:
            if line.startswith(b"data:"):
                stamps.append(now)
                last = line
    await reader.readline()  # the empty trailer's CRLF
    return sent, stamps, json.loads(last[5:]) if last else {}


def streams_from_event_loop(address, bodies, concurrency, open_window):
    """The same on `concurrency` connections served by one asyncio event loop (epoll), as
    h2load or a proxy's event loop reads many streams: one thread wakes for whatever
    events are ready."""
    host, port = address.rsplit(":", 1)
    per_request = [None] * len(bodies)

    async def run():
        connections = [await asyncio.open_connection(host, int(port)) for _ in range(concurrency)]
        open_window()

        async def work(j):
            reader, writer = connections[j]
            for i in range(j, len(bodies), concurrency):
                per_request[i] = await stream_on(reader, writer, address, bodies[i])

        try:
            await asyncio.wait_for(asyncio.gather(*(work(j) for j in range(concurrency))), 300)
        finally:
            for _, writer in connections:
                writer.close()

    try:
        asyncio.run(run())
    except Exception as e:  # noqa: BLE001 (reported as the run's failure)
        raise SystemExit(f"the loaded run failed: {e!r}")
    return per_request


def loaded(server, prompts, max_tokens, concurrency, client):
    """The mix through `concurrency` streams released together, read by `client`
    (threads: one per stream; event-loop: one asyncio loop for all)."""
    bodies = [json.dumps({"input_ids": p, "max_tokens": max_tokens}).encode() for p in prompts]
    before = {}

    def open_window():
        before["histograms"] = server_histograms(server)
        before["steps"] = server_process.metric(server.metrics, STEP_CPU, MODEL)
        before["threads"] = thread_cpu_ns(server.proc.pid)
        before["server_cpu"], before["client_cpu"] = cpu_seconds(server.proc.pid), time.process_time()
        before["release"] = time.perf_counter()

    streams = streams_from_threads if client == "threads" else streams_from_event_loop
    per_request = streams(server.http, bodies, concurrency, open_window)
    histograms, steps_before, threads_before = before["histograms"], before["steps"], before["threads"]
    server_cpu, client_cpu, release = before["server_cpu"], before["client_cpu"], before["release"]
    server_cpu = cpu_seconds(server.proc.pid) - server_cpu
    threads_after = thread_cpu_ns(server.proc.pid)
    client_cpu = time.process_time() - client_cpu
    step_ns = (server_process.metric(server.metrics, STEP_CPU, MODEL) - steps_before) * 1e9
    own_ns = own_cpu_ns(threads_before, threads_after, step_ns)
    by_name = cpu_ns_by_thread_name(threads_before, threads_after)
    histograms = {k: v - histograms[k] for k, v in server_histograms(server).items()}
    ttft, itl, tokens, end = [], [], 0, release
    for sent, stamps, last in per_request:
        check_answer(stamps, last, max_tokens)
        ttft.append(stamps[0] - sent)
        itl.extend(b - a for a, b in zip(stamps, stamps[1:]))
        tokens += last["usage"]["completion_tokens"]
        end = max(end, stamps[-1])
    wall = end - release
    return {"tokens": tokens, "seconds": wall, "tokens_per_s": tokens / wall,
            "ttft_p50_ms": percentile(ttft, 50) * 1e3, "ttft_p99_ms": percentile(ttft, 99) * 1e3,
            "itl_p50_ms": percentile(itl, 50) * 1e3, "itl_p99_ms": percentile(itl, 99) * 1e3,
            "server_cpu_us_per_token": server_cpu / tokens * 1e6, "client_cpu_us_per_token": client_cpu / tokens * 1e6,
            "server_own_us_per_token": own_ns / tokens / 1e3,
            "server_step_us_per_token": step_ns / tokens / 1e3,
            "server_us_per_token_by_thread": {k: v / tokens / 1e3 for k, v in sorted(by_name.items())},
            # The server's own view (/metrics): how much of the TTFT is waiting for a batch slot.
            "server_queue_mean_ms": mean(histograms, "hetrt_llm_request_queue_time_seconds"),
            "server_ttft_mean_ms": mean(histograms, "hetrt_llm_time_to_first_token_seconds")}


STEP_CPU = "hetrt_llm_engine_step_thread_cpu_seconds_total"
HISTOGRAMS = ("hetrt_llm_request_queue_time_seconds", "hetrt_llm_time_to_first_token_seconds")


def server_histograms(server):
    return {f"{name}_{part}": server_process.metric(server.metrics, f"{name}_{part}", MODEL)
            for name in HISTOGRAMS for part in ("sum", "count")}


def mean(deltas, name):
    count = deltas[f"{name}_count"]
    return deltas[f"{name}_sum"] / count * 1e3 if count else float("nan")


# --- report ------------------------------------------------------------------------

ROWS = [  # (key, label, format)
    ("engine_tokens_per_s", "engine tokens/s", "%.0f"),
    ("engine_cpu_us_per_token", "engine CPU us/token", "%.1f"),
    ("unloaded_ttft_ms", "unloaded TTFT ms (median)", "%.3f"),
    ("server_tokens_per_s", "server tokens/s (loaded)", "%.0f"),
    ("ttft_p50_ms", "TTFT p50 ms", "%.3f"),
    ("ttft_p99_ms", "TTFT p99 ms", "%.3f"),
    ("itl_p50_ms", "inter-token p50 ms", "%.3f"),
    ("itl_p99_ms", "inter-token p99 ms", "%.3f"),
    ("server_queue_mean_ms", "server: mean queue time ms (/metrics)", "%.3f"),
    ("server_ttft_mean_ms", "server: mean TTFT ms (/metrics)", "%.3f"),
    ("server_cpu_us_per_token", "server CPU us/token", "%.1f"),
    ("client_cpu_us_per_token", "client CPU us/token (this process)", "%.1f"),
    ("server_minus_engine_us_per_token", "server CPU - engine CPU us/token (noisy)", "%.1f"),
    ("server_own_us_per_token", "server's own CPU us/token (target < 15)", "%.1f"),
    ("throughput_ratio", "server tok/s / engine tok/s (target >= 0.9)", "%.3f"),
    ("ttft_p99_ratio", "p99 TTFT / unloaded TTFT (target < 10)", "%.2f"),
]


def derive(row):
    row["server_minus_engine_us_per_token"] = row["server_cpu_us_per_token"] - row["engine_cpu_us_per_token"]
    row["throughput_ratio"] = row["server_tokens_per_s"] / row["engine_tokens_per_s"]
    row["ttft_p99_ratio"] = row["ttft_p99_ms"] / row["unloaded_ttft_ms"]
    return row


def meets(key, value):
    op, bound = TARGETS[key]
    return value >= bound if op == ">=" else value < bound


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hetrt", default=os.path.join(ROOT, "build", "bin", "hetrt"))
    parser.add_argument("--fixtures", default=os.environ.get("HETRT_FIXTURES",
                                                             os.path.join(ROOT, "..", "shared", "fixtures")))
    parser.add_argument("--requests", type=int, default=32)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--min-prompt", type=int, default=8)
    parser.add_argument("--max-prompt", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0, help="the prompts' ids and lengths")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ttft-samples", type=int, default=10)
    parser.add_argument("--python-path", default=None)
    parser.add_argument("--engine", choices=("cli", "python"), default="python",
                        help="the in-process baseline: python (default), hetrt.llm.Engine.generate_batch on one "
                             "engine kept warm across rounds (Python's step loop adds about 1%%); cli, `hetrt "
                             "generate` with every prompt, a fresh process each round (cold: weights and cache "
                             "first touched in the run)")
    parser.add_argument("--client", choices=("threads", "event-loop"), default="threads",
                        help="how the loaded streams are read: threads (default), one http.client connection per "
                             "thread, each thread asleep in recv until its next event (every token's send then wakes "
                             "a thread); event-loop, one asyncio loop reading every connection (epoll), as h2load "
                             "or a proxy in front of the server does")
    parser.add_argument("--config", default=None, help="config.json of the served model (JSON text)")
    parser.add_argument("--server-arg", action="append", default=[], help="an extra `hetrt serve` argument")
    parser.add_argument("--cpu-settings", choices=("engine", "serve"), default="engine",
                        help="engine (default): the server's CPU plugin as the engine in process has it (spin "
                             "200 us, loops always split), so both run the same kernels the same way; serve: "
                             "hetrt serve's own defaults (--cpu-spin-us 20, --cpu-serial-below-us -1)")
    parser.add_argument("--json", default=None, help="write the results here")
    a = parser.parse_args()

    model_dir = os.path.join(a.fixtures, "tvm-0.25-llm", "tiny_llama")
    if not os.path.isfile(os.path.join(model_dir, "model.so")):
        raise SystemExit(f"{model_dir} not found (--fixtures or HETRT_FIXTURES)")
    with open(os.path.join(model_dir, "meta.json")) as f:
        sizes = json.load(f)["config"]
    if a.max_prompt + a.max_tokens > sizes["context_window_size"]:
        raise SystemExit("--max-prompt + --max-tokens exceed the model's context window")
    prompts = make_prompts(a.requests, a.min_prompt, a.max_prompt, a.seed, sizes["vocab_size"])
    python_path = a.python_path or os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(a.hetrt))), "python")
    engine = CliEngine(model_dir, a.hetrt)
    if a.engine == "python":
        try:
            engine = InProcessEngine(model_dir, python_path)
        except ImportError as e:
            print(f"hetrt.llm not importable from {python_path} ({e}): the CLI instead", file=sys.stderr)

    config = json.loads(a.config) if a.config else None
    repository = server_process.fixture_repository(os.path.join(a.fixtures, "tvm-0.25-llm"),
                                                   {MODEL: ("tiny_llama", ["model.so", "params"], config)})
    rounds = []
    try:
        cpu = ["--cpu-spin-us", "200", "--cpu-serial-below-us", "0"] if a.cpu_settings == "engine" else []
        with server_process.Server(a.hetrt, repository, cpu + a.server_arg) as server:
            # Warm-up, not counted: first-touch memory, threads started, connections.
            engine.run(prompts, a.max_tokens)
            unloaded_ttft(server.http, prompts, a.max_tokens, 2)
            loaded(server, prompts, a.max_tokens, a.concurrency, a.client)
            for r in range(a.rounds):
                # Interleaved: a slow moment of the machine falls on one round of each.
                e = engine.run(prompts, a.max_tokens)
                ttft = unloaded_ttft(server.http, prompts, a.max_tokens, a.ttft_samples)
                s = loaded(server, prompts, a.max_tokens, a.concurrency, a.client)
                row = derive({"engine_tokens_per_s": e["tokens_per_s"],
                              "engine_cpu_us_per_token": e["cpu_us_per_token"], "unloaded_ttft_ms": ttft * 1e3,
                              "server_tokens_per_s": s["tokens_per_s"],
                              **{k: v for k, v in s.items() if k not in ("tokens", "seconds", "tokens_per_s")}})
                rounds.append(row)
                print(f"round {r + 1}/{a.rounds}: engine {row['engine_tokens_per_s']:.0f} tok/s, server "
                      f"{row['server_tokens_per_s']:.0f} tok/s, TTFT p99 {row['ttft_p99_ms']:.2f} ms", file=sys.stderr)
                print("  server CPU us/token by thread: " + ", ".join(
                    f"{k} {v:.1f}" for k, v in row["server_us_per_token_by_thread"].items() if v >= 0.05) +
                      f"; of which inside steps {row['server_step_us_per_token']:.1f}", file=sys.stderr)
    finally:
        shutil.rmtree(repository, ignore_errors=True)

    median = {key: statistics.median(r[key] for r in rounds) for key, _, _ in ROWS}
    # Ratios of the medians (what the targets are about), not medians of ratios.
    median = derive(median)
    cores = os.cpu_count()
    print(f"\nhetrt serve, {MODEL}: {a.requests} requests x {a.max_tokens} tokens, "
          f"prompts {a.min_prompt}..{a.max_prompt}, concurrency {a.concurrency}, {a.rounds} rounds, {cores} cores; "
          f"engine: {engine.what}; load client: {a.client}")
    header = "%-46s" % "" + "".join("%12s" % f"round {i + 1}" for i in range(len(rounds))) + "%12s" % "median"
    print(header)
    for key, label, fmt in ROWS:
        line = "%-46s" % label + "".join("%12s" % (fmt % r[key]) for r in rounds) + "%12s" % (fmt % median[key])
        if key in TARGETS:
            line += "  " + ("meets" if meets(key, median[key]) else "MISSES") + " target"
        print(line)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"command": " ".join([os.path.basename(sys.executable)] + sys.argv),
                       "model": MODEL, "cores": cores, "engine": engine.what, "client": a.client,
                       "mix": {"requests": a.requests, "concurrency": a.concurrency, "max_tokens": a.max_tokens,
                               "prompt_lengths": [a.min_prompt, a.max_prompt], "seed": a.seed},
                       "rounds": rounds, "median": median,
                       "targets": {k: {"op": op, "bound": bound, "value": median[k], "meets": meets(k, median[k])}
                                   for k, (op, bound) in TARGETS.items()}}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
