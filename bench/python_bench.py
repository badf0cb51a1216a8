#!/usr/bin/python3
"""What the Python package adds to a run, measured in one process.

Each round times a Python loop of ``m.run(...)`` and, right after it, the same
number of runs looped in C++ (``m.benchmark(number=N)``, which times
``Run()`` x N + one ``Synchronize()`` inside the extension); rounds alternate
so both see the same machine. Writes Google Benchmark's JSON layout (real_time
in us per run, the median over rounds) so scripts/figures_report.py reads it
like the C++ benches.

Usage: PYTHONPATH=build/python bench/python_bench.py [--min-time S] [--out FILE]
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import time

import numpy as np

import hetrt


def fixture(name):
    root = os.environ.get("HETRT_FIXTURES") or os.path.join(os.path.dirname(__file__), "..", "..", "shared", "fixtures")
    return os.path.join(root, "tvm-0.18", name, "deploy.so")


def rounds_of(python_loop, cpp_loop, runs_per_round, min_time):
    """Alternates the two loops until min_time has passed (at least 5 rounds);
    microseconds per run of each round."""
    py_us, cpp_us = [], []
    python_loop(runs_per_round)  # warm
    cpp_loop(runs_per_round)
    deadline = time.perf_counter() + min_time
    while len(py_us) < 5 or time.perf_counter() < deadline:
        start = time.perf_counter_ns()
        python_loop(runs_per_round)
        py_us.append((time.perf_counter_ns() - start) / 1e3 / runs_per_round)
        cpp_us.append(cpp_loop(runs_per_round) * 1e6)
    return py_us, cpp_us


def entry(name, us, runs_per_round, **counters):
    median = statistics.median(us)
    result = {
        "name": name,
        "run_name": name,
        "run_type": "iteration",
        "repetitions": 1,
        "repetition_index": 0,
        "threads": 1,
        "iterations": len(us) * runs_per_round,
        "real_time": median,
        "cpu_time": median,
        "time_unit": "us",
    }
    result.update(counters)
    return result


def cpp_runs(module):
    return lambda n: module.benchmark(repeat=1, number=n, warmup=0).mean


def chain200(min_time, runs):
    m = hetrt.load(fixture("chain200")).create([hetrt.cpu()])
    inputs = os.path.join(os.path.dirname(fixture("chain200")), "inputs.params")
    for name, value in hetrt.load_param_dict(inputs).items():
        m.set_input(name, value)

    def python_loop(n):
        run = m.run
        for _ in range(n):
            run()

    py_us, cpp_us = rounds_of(python_loop, cpp_runs(m), runs, min_time)
    return [entry("Python/chain200/run_from_python", py_us, runs),
            entry("Python/chain200/run_from_cpp", cpp_us, runs)]


def add3(min_time, runs):
    m = hetrt.load(fixture("add3")).create([hetrt.cpu()])
    arrays = {}
    for info in m.get_inputs():
        a = hetrt.empty(info.shape, info.dtype)  # 64-byte aligned: bound without a copy
        a[...] = 1.0
        arrays[info.name] = a
    m.run(**arrays)

    def python_loop(n):
        run = m.run
        for _ in range(n):
            run(**arrays)

    py_us, cpp_us = rounds_of(python_loop, cpp_runs(m), runs, min_time)
    return [entry("Python/add3/run_with_three_inputs_from_python", py_us, runs),
            entry("Python/add3/run_from_cpp", cpp_us, runs)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min-time", type=float, default=2.0, help="seconds per benchmark (at least 5 rounds)")
    parser.add_argument("--runs-per-round", type=int, default=2000)
    parser.add_argument("--out", help="JSON file (default: stdout)")
    args = parser.parse_args()
    benchmarks = chain200(args.min_time, args.runs_per_round) + add3(args.min_time, args.runs_per_round)
    report = {
        "context": {
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "executable": "bench/python_bench.py",
            "python": platform.python_version(),
            "numpy": np.__version__,
            "hetrt_module": hetrt.__file__,
            "load_avg": list(os.getloadavg()),
        },
        "benchmarks": benchmarks,
    }
    text = json.dumps(report, indent=2)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
