"""Benchmark statistics and per-node profiles with the semantics of
`hetrt bench`: percentiles by nearest rank, nodes keyed by their position in
issue order, a Chrome trace of one run with every node at its true time."""

import json
import statistics


def percentile(values, p):
    """The value at rank round(p * (n - 1)) of the sorted values (as `hetrt bench`)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * (len(ordered) - 1) + 0.5))]


def _mean(values):
    return sum(values) / len(values) if values else 0.0


class BenchmarkResult:
    """Seconds per run of each round (``results``) and their mean, median,
    p99, min, max and std (TVM's BenchmarkResult, plus p99)."""

    def __init__(self, results):
        self.results = list(results)
        self.mean = _mean(self.results)
        self.median = percentile(self.results, 0.5)
        self.p99 = percentile(self.results, 0.99)
        self.min = min(self.results)
        self.max = max(self.results)
        self.std = statistics.pstdev(self.results)

    def __repr__(self):
        ms = {k: getattr(self, k) * 1e3 for k in ("mean", "median", "p99", "min", "max", "std")}
        return ("BenchmarkResult(ms: " + ", ".join(f"{k} {v:.4f}" for k, v in ms.items()) +
                f"; {len(self.results)} rounds)")


class Profile(dict):
    """Plain data (json.dumps takes it): ``nodes`` (one dict per node in issue
    order: node, kernel, lane, device, mean_us, median_us, p99_us, waiting_us,
    bytes), ``busy_ms_per_lane``, ``run_ms`` (mean, median, p99 of the profiled
    runs, issue to last end), ``runs``, ``mode`` and ``trace`` (the file written)."""

    def table(self):
        """The table `hetrt bench` prints."""
        lines = [f"{'node':<40} {'lane':<20} {'mean us':>10} {'median us':>10} {'p99 us':>10} {'waiting us':>10}"]
        for n in self["nodes"]:
            lines.append(f"{n['node'][:40]:<40} {n['lane']:<20} {n['mean_us']:10.2f} {n['median_us']:10.2f} "
                         f"{n['p99_us']:10.2f} {n['waiting_us']:10.2f}")
        busy = " ".join(f"{lane} {ms:.3f} ms" for lane, ms in sorted(self["busy_ms_per_lane"].items()))
        run = self["run_ms"]
        lines.append(f"busy per lane (mean per run): {busy}")
        lines.append(f"run (profiled, issue to last end): mean {run['mean']:.3f} ms, median {run['median']:.3f} ms, "
                     f"p99 {run['p99']:.3f} ms over {self['runs']} runs ({self['mode']})")
        return "\n".join(lines)


def profile(executor, repeat, warmup, trace, sequential):
    if repeat < 1 or warmup < 0:
        raise ValueError("profile: repeat must be >= 1, warmup >= 0")
    graph = executor.graph_info()
    for _ in range(warmup):
        executor.run_profiled()
    runs = [executor.run_profiled() for _ in range(repeat)]
    first = runs[0]
    nodes = []
    busy = {}
    for k, t in enumerate(first["nodes"]):
        times = [(r["nodes"][k]["end_ns"] - r["nodes"][k]["start_ns"]) / 1e3 for r in runs]
        waits = [r["nodes"][k]["wait_ns"] / 1e3 for r in runs]
        node = graph["nodes"][t["node_id"]]
        lane = first["lanes"][t["lane"]]
        busy[lane] = busy.get(lane, 0.0) + _mean(times) / 1e3
        nodes.append({
            "node": node["name"],
            "kernel": node["op"],
            "lane": lane,
            "device": _device_name(t["device"]),
            "mean_us": _mean(times),
            "median_us": percentile(times, 0.5),
            "p99_us": percentile(times, 0.99),
            "waiting_us": _mean(waits),
            "bytes": t["bytes"],
        })
    totals = [(r["run_end_ns"] - r["run_start_ns"]) / 1e6 for r in runs]
    if trace is not None:
        with open(trace, "w") as f:
            json.dump(chrome_trace(graph, first), f, indent=1)
    return Profile(
        nodes=nodes,
        busy_ms_per_lane=busy,
        run_ms={"mean": _mean(totals), "median": percentile(totals, 0.5), "p99": percentile(totals, 0.99)},
        runs=repeat,
        mode="sequential" if sequential else "asynchronous",
        trace=None if trace is None else str(trace),
    )


def _device_name(device):
    from . import _hetrt

    return f"{_hetrt.device_type_name(device[0])}:{device[1]}"


def _shapes(graph, eids):
    return " ".join(f"[{', '.join(map(str, graph['shapes'][e]))}] {graph['dtypes'][e]}" for e in eids)


def chrome_trace(graph, run):
    """One profiled run as Chrome trace events ("X" per node at its true time,
    one track per lane; copies labelled with bytes and GB/s)."""
    start = run["run_start_ns"]
    events = [{"name": "thread_name", "ph": "M", "pid": 0, "tid": lane, "args": {"name": name}}
              for lane, name in enumerate(run["lanes"])]
    for t in run["nodes"]:
        node = graph["nodes"][t["node_id"]]
        name = node["name"]
        args = {"kernel": node["op"], "inputs": _shapes(graph, node["inputs"]),
                "outputs": _shapes(graph, node["outputs"]), "device": _device_name(t["device"]),
                "wait_us": t["wait_ns"] / 1e3,
                "waited_for": [graph["nodes"][w]["name"] for w in t["waited_for"]]}
        if node["op"] == "__copy":
            seconds = (t["end_ns"] - t["start_ns"]) / 1e9
            name = f"__copy {t['bytes']} B, {t['bytes'] / seconds / 1e9 if seconds > 0 else 0.0:.2f} GB/s"
            args["bytes"] = t["bytes"]
        events.append({"name": name, "cat": node["op"], "ph": "X", "ts": (t["start_ns"] - start) / 1e3,
                       "dur": (t["end_ns"] - t["start_ns"]) / 1e3, "pid": 0, "tid": t["lane"], "args": args})
        if t["submit_ns"] < t["start_ns"] and run["lanes"][t["lane"]] != "host":  # when the host issued it
            events.append({"name": "issue " + node["name"], "ph": "i", "s": "t",
                           "ts": (t["submit_ns"] - start) / 1e3, "pid": 0, "tid": 0})
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {"clock_uncertainty_us": run["clock_uncertainty_ns"] / 1e3}}
