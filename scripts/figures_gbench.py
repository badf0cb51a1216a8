"""Reading scripts/figures.sh's raw folder (Google Benchmark JSON, text output,
commands, skip reasons) and formatting numbers for docs/figures.md."""
import json
import math
import os
import re
import statistics


class Missing(Exception):
    """A figure that could not be computed; the message says why."""


_TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
_STANDARD_KEYS = {
    "name", "run_name", "run_type", "family_index", "per_family_instance_index", "repetitions",
    "repetition_index", "threads", "iterations", "real_time", "cpu_time", "time_unit", "aggregate_name",
    "aggregate_unit", "label", "error_occurred", "error_message",
}
# Name segments Google Benchmark appends that carry no identity of their own.
_NOISE_SEGMENT = re.compile(r"^(real_time|manual_time|process_time|min_time:.*|iterations:\d+|repeats:\d+)$")


def key_of(name):
    """'BM_Copy4KiB/0/min_time:2.000/real_time' -> 'BM_Copy4KiB/0'."""
    return "/".join(s for s in name.split("/") if not _NOISE_SEGMENT.match(s))


class Result:
    """One benchmark's result: the median aggregate when repetitions ran,
    else the median over its iterations' entries (one entry without repetitions)."""

    def __init__(self, key, entries):
        self.key = key
        errors = [e for e in entries if e.get("error_occurred")]
        self.error = errors[0].get("error_message", "error") if errors else None
        medians = [e for e in entries if e.get("run_type") == "aggregate" and e.get("aggregate_name") == "median"]
        runs = medians or [e for e in entries if e.get("run_type", "iteration") == "iteration"] or entries
        first = runs[0]
        self.repetitions = len(runs) if not medians else first.get("repetitions", 1)
        self.aggregate = "median of %d" % self.repetitions if medians else (
            "median of %d" % len(runs) if len(runs) > 1 else "")
        self.threads = first.get("threads", 1)
        self.iterations = first.get("iterations", 0)
        self.label = first.get("label", "")
        scale = _TIME_UNITS[first.get("time_unit", "ns")]
        self.real_s = statistics.median(e["real_time"] for e in runs) * scale
        self.cpu_s = statistics.median(e["cpu_time"] for e in runs) * scale
        self.counters = {}
        for k in first:
            if k not in _STANDARD_KEYS and isinstance(first[k], (int, float)):
                self.counters[k] = statistics.median(e[k] for e in runs if k in e)

    def counter(self, name):
        if name not in self.counters:
            raise Missing("%s has no counter %s" % (self.key, name))
        return self.counters[name]


class Bench:
    """One binary's Google Benchmark JSON."""

    def __init__(self, name, data):
        self.name = name
        self.context = data.get("context", {})
        groups = {}
        for e in data.get("benchmarks", []):
            groups.setdefault(key_of(e.get("run_name") or e["name"]), []).append(e)
        self.results = {k: Result(k, v) for k, v in groups.items()}

    def get(self, key):
        r = self.results.get(key)
        if r is None:
            raise Missing("%s: no result %s" % (self.name, key))
        if r.error:
            raise Missing("%s: %s" % (key, r.error))
        return r


class RawFolder:
    """NAME.json (Google Benchmark or python_bench), NAME.txt (a command's output),
    NAME.cmd (the command that made it), NAME.skipped (why it did not run)."""

    def __init__(self, path):
        self.path = path
        self._texts = {}  # (name, suffix) -> text or None: each file is read once
        self._benches = {}  # name -> Bench: each JSON is parsed once

    def _read(self, name, suffix):
        if (name, suffix) not in self._texts:
            p = os.path.join(self.path, name + suffix)
            text = None
            if os.path.exists(p):
                with open(p, encoding="utf-8") as f:
                    text = f.read()
            self._texts[(name, suffix)] = text
        return self._texts[(name, suffix)]

    def command(self, name):
        return (self._read(name, ".cmd") or "").strip()

    def skipped(self, name):
        reason = self._read(name, ".skipped")
        return reason.strip() if reason is not None else None

    def _absent(self, name):
        reason = self.skipped(name)
        return Missing(("not run: " + reason) if reason else "no output from %s (did it run?)" % name)

    def bench(self, name):
        if name in self._benches:
            return self._benches[name]
        text = self._read(name, ".json")
        if text is None:
            raise self._absent(name)
        try:
            self._benches[name] = Bench(name, json.loads(text))
        except (ValueError, KeyError) as e:
            raise Missing("%s.json unreadable: %s" % (name, e))
        return self._benches[name]

    def data(self, name):
        """NAME.json as plain data, for a script that writes its own layout
        (bench/serve_load.py)."""
        text = self._read(name, ".json")
        if text is None:
            raise self._absent(name)
        try:
            return json.loads(text)
        except ValueError as e:
            raise Missing("%s.json unreadable: %s" % (name, e))

    def text(self, name):
        text = self._read(name, ".txt")
        if text is None:
            raise self._absent(name)
        return text


def sig(v):
    """Three significant digits, never in exponent form."""
    a = abs(float("%.3g" % v))
    v = math.copysign(a, v)
    if a >= 100:
        return "%.0f" % v
    if a >= 10:
        return "%.1f" % v
    if a >= 1:
        return "%.2f" % v
    if a == 0:
        return "0"
    digits = 2 - math.floor(math.log10(a))
    return "%.*f" % (digits, v)


def fmt_s(seconds):
    if seconds < 1e-6:
        return sig(seconds * 1e9) + " ns"
    if seconds < 1e-3:
        return sig(seconds * 1e6) + " us"
    if seconds < 1:
        return sig(seconds * 1e3) + " ms"
    return sig(seconds) + " s"


def fmt_us(us):
    return fmt_s(us * 1e-6)


def fmt_ratio(r):
    return sig(r) + "x"


def fmt_gbs(bytes_per_second):
    return sig(bytes_per_second / 1e9) + " GB/s"


def fmt_rate(per_second):
    if per_second >= 1000:
        return sig(per_second / 1000) + "k/s"
    return sig(per_second) + "/s"


def fmt_bytes(n):
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return "%d %s" % (n // size, unit)
    return "%d B" % n


def fmt_counter(v):
    return sig(v) if isinstance(v, float) else str(v)
