#!/usr/bin/env python3
"""Instances that overlap their devices in a `hetrt serve` process: the
CPU+OpenCL two-stage model (bench/make_bench_model two_stage) with 1 instance and
with 2, gRPC requests from h2load at concurrency 4, each device on a core of
its own so that one instance and two have the same hardware (the server and
h2load on the last core with one CPU thread per executor, PoCL's one worker
pinned to core 0). Once per `--scheduling` of hetrt serve: `batch` (its
default) and `default` (the kernel's). Reports requests/s per model and the
ratio of 2 instances to 1, runs of the two models interleaved.

Usage: serve_overlap.py --hetrt build/bin/hetrt --make-model build/bin/make_bench_model
         [--seconds 4] [--repetitions 3] [--json OUT]"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "serve"))
import serve_load  # noqa: E402  (h2load runs and request bodies)
import server_process  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hetrt", required=True)
    parser.add_argument("--make-model", required=True)
    parser.add_argument("--seconds", type=int, default=4)
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--schedulings", default="batch,default",
                        help="values of hetrt serve's --scheduling to run; 'none' passes no flag (an older hetrt)")
    parser.add_argument("--json")
    args = parser.parse_args()
    if shutil.which("h2load") is None or shutil.which("taskset") is None:
        raise SystemExit("h2load and taskset are needed: run scripts/setup.sh")
    last_core = str(os.cpu_count() - 1)
    work = tempfile.mkdtemp(prefix="hetrt-serve-overlap-")
    repo = os.path.join(work, "repo")
    for model, count in (("two_stage_x1", 1), ("two_stage_x2", 2)):
        os.makedirs(os.path.join(repo, model, "1"))
        with open(os.path.join(repo, model, "config.json"), "w") as f:
            json.dump({"instance_group": [{"count": count, "devices": ["cpu", "opencl"]}]}, f)
    subprocess.check_call([args.make_model, "two_stage", os.path.join(repo, "two_stage_x1", "1")],
                          stdout=subprocess.DEVNULL)
    os.symlink(os.path.join(repo, "two_stage_x1", "1", "deploy.so"), os.path.join(repo, "two_stage_x2", "1", "deploy.so"))
    env = dict(os.environ, HETRT_NUM_THREADS="1", POCL_MAX_PTHREAD_COUNT="1", POCL_AFFINITY="1")
    on_last_core = ["taskset", "-c", last_core]
    results = {}
    for scheduling in args.schedulings.split(","):
        rates = {"two_stage_x1": [], "two_stage_x2": []}
        # Every thread starts on the last core; PoCL's worker then pins itself to core 0.
        flags = [] if scheduling == "none" else ["--scheduling", scheduling]
        with server_process.Server(args.hetrt, repo, flags, env=env,
                                   launcher=on_last_core) as server:
            bodies = {}
            for model in rates:
                metadata = serve_load.get_json(server.http, f"/v2/models/{model}")
                os.makedirs(os.path.join(work, model), exist_ok=True)
                bodies[model] = serve_load.make_requests(model, metadata, os.path.join(work, model))[0]["grpc"]
            log = os.path.join(work, "h2load.log")
            for _ in range(args.repetitions):
                for model in rates:
                    done = serve_load.h2load("grpc", server.grpc, model, bodies[model], 0, args.concurrency,
                                             args.seconds, log, launcher=on_last_core)
                    if done is None:
                        raise SystemExit(f"h2load on {model}: a connection was never answered")
                    rates[model].append(done / args.seconds)
        x1, x2 = statistics.median(rates["two_stage_x1"]), statistics.median(rates["two_stage_x2"])
        results[scheduling] = {"x1_per_s": x1, "x2_per_s": x2, "ratio": x2 / x1}
        print(f"--scheduling {scheduling:7s}: 1 instance {x1:6.1f}/s, 2 instances {x2:6.1f}/s: {x2 / x1:.2f}x "
              f"(medians of {args.repetitions}, gRPC, concurrency {args.concurrency})", flush=True)
    shutil.rmtree(work, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cpus": os.cpu_count(), "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
