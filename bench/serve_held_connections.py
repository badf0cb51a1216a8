#!/usr/bin/env python3
"""A client's latency on `hetrt serve` while other connections are held open
without being used: h2load (REST binary extension, keep-alive) on one model,
first alone, then with idle keep-alive connections, clients that sent half a
request header, and clients dripping a byte every half second held open
(tests/serve/held_connections.py). Reports both runs' requests/s and p50/p99,
the ratios of the second to the first (same run, same machine), and the
server's RSS before and while the connections are held.

Usage: serve_held_connections.py --hetrt build/bin/hetrt [--model mlp] [--seconds 4]
         [--concurrency 4] [--idle 500] [--slow 20] [--json OUT]
Fixtures from $HETRT_FIXTURES (default <repo>/../shared/fixtures)."""
import argparse
import json
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "serve"))
import serve_load  # noqa: E402  (h2load runs and request bodies)
import server_process  # noqa: E402
from held_connections import HeldConnections  # noqa: E402


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) / 1024 for line in f if line.startswith("VmRSS:"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hetrt", required=True)
    parser.add_argument("--model", default="mlp")
    parser.add_argument("--seconds", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--idle", type=int, default=500)
    parser.add_argument("--slow", type=int, default=20)
    parser.add_argument("--json")
    args = parser.parse_args()
    if shutil.which("h2load") is None or shutil.which("protoc") is None:
        raise SystemExit("h2load or protoc not found: run scripts/setup.sh")
    fixtures = os.path.join(os.environ.get("HETRT_FIXTURES", os.path.join(ROOT, "..", "shared", "fixtures")),
                            "tvm-0.18")
    work = tempfile.mkdtemp(prefix="hetrt-held-")
    repo = server_process.fixture_repository(os.path.abspath(fixtures), {args.model: (args.model, ["deploy.so"], None)})
    rows = {}
    with server_process.Server(args.hetrt, repo) as server:
        metadata = serve_load.get_json(server.http, f"/v2/models/{args.model}")
        bodies, _, header_length, _ = serve_load.make_requests(args.model, metadata, work)
        pid = server.proc.pid

        def run(label):
            row = serve_load.measure("hetrt", pid, "rest-binary", server.http, args.model, bodies["rest-binary"],
                                     header_length, args.concurrency, args.seconds, work)
            row["rss_mib"] = rss_mib(pid)
            rows[label] = row
            print(f"{label:5s} {row.get('requests_per_s', 0):8.0f} req/s p50 {row.get('p50_us', 0):6d} us "
                  f"p99 {row.get('p99_us', 0):6d} us  server RSS {row['rss_mib']:.0f} MiB {row.get('error', '')}",
                  flush=True)

        run("alone")
        held = HeldConnections(server.http, idle=args.idle, half=args.slow, drip=4)
        try:
            run("held")
        finally:
            held.close()
    shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(repo, ignore_errors=True)
    alone, with_held = rows["alone"], rows["held"]
    if "error" not in alone and "error" not in with_held:
        print(f"with {args.idle} idle + {args.slow} half-sent + 4 dripping connections held: "
              f"p99 {with_held['p99_us'] / alone['p99_us']:.2f}x, p50 {with_held['p50_us'] / alone['p50_us']:.2f}x, "
              f"throughput {with_held['requests_per_s'] / alone['requests_per_s']:.2f}x of alone; "
              f"server RSS {alone['rss_mib']:.0f} -> {with_held['rss_mib']:.0f} MiB")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"model": args.model, "idle": args.idle, "slow": args.slow, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
