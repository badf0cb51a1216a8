#!/usr/bin/python3
"""The markdown side of scripts/figures.sh (Python 3 standard library only).

  figures_report.py machine --build DIR --mode TEXT      machine.json on stdout
  figures_report.py render --raw DIR --out docs/figures.md [--update README.md ...] [--allow-missing]

`render` reads the raw folder figures.sh filled (Google Benchmark JSON, command
output, the command lines, skip reasons), writes docs/figures.md and rewrites
the generated blocks of each --update file:

  <!-- figures:KEY [FORM] ... -->  ...  <!-- /figures:KEY -->

KEY is a section of docs/figures.md (cpu, async, devices, demo, export, micro,
serving, cuda, tvm) or `source` (where the figures come from); FORM is
`readme` (the short form, default), `page` (a docs page's form) or `doc` (as in
docs/figures.md). It exits 1 when a required figure could not be computed
(each is listed), unless --allow-missing.
"""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import figures_sections  # noqa: E402
from figures_gbench import RawFolder  # noqa: E402


def _run(cmd, cwd=None):
    try:
        return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def _first_match(path, pattern):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                m = re.match(pattern, line)
                if m:
                    return m.group(1).strip()
    except OSError:
        pass
    return ""


def machine(build, mode):
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cache = os.path.join(build, "CMakeCache.txt")
    compiler = _first_match(cache, r"CMAKE_CXX_COMPILER:\w+=(.*)")
    gpu = ""
    if shutil.which("nvidia-smi"):
        gpu = _run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"])
    mem_kb = _first_match("/proc/meminfo", r"MemTotal:\s*(\d+)")
    dirty = _run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=repo)
    return {
        "mode": mode,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": _run(["git", "rev-parse", "HEAD"], cwd=repo) + (" + uncommitted changes" if dirty else ""),
        "cpu": _first_match("/proc/cpuinfo", r"model name\s*:(.*)") or platform.processor(),
        "cores": len(os.sched_getaffinity(0)),
        "cores_online": os.cpu_count(),
        "memory_gib": round(int(mem_kb) / (1 << 20), 1) if mem_kb else None,
        "os": _first_match("/etc/os-release", r'PRETTY_NAME="?([^"]*)') + ", Linux " + platform.release(),
        "virtualization": _run(["systemd-detect-virt"]) if shutil.which("systemd-detect-virt") else "",
        "compiler": (_run([compiler, "--version"]).splitlines() or [compiler])[0] if compiler else "",
        "build_type": _first_match(cache, r"CMAKE_BUILD_TYPE:\w+=(.*)"),
        "build_dir": os.path.relpath(os.path.abspath(build), repo),
        "gpu": gpu or "none",
        "arm_gcc": _run(["arm-none-eabi-gcc", "--version"]).split("\n")[0] if shutil.which("arm-none-eabi-gcc") else "",
        "qemu": _run(["qemu-system-arm", "--version"]).split("\n")[0] if shutil.which("qemu-system-arm") else "",
        "load_avg": [round(x, 2) for x in os.getloadavg()],
    }


def _devices(raw):
    """The devices `hetrt demo` saw (OpenCL and Vulkan drivers with versions)."""
    try:
        text = raw.text("demo")
    except Exception:
        return "not listed (`hetrt demo` did not run)"
    return "<br>".join(line[len("device "):] for line in text.splitlines() if line.startswith("device "))


def _machine_lines(m, benches, devices):
    gbench_build = sorted({b.context["library_build_type"] for b in benches if "library_build_type" in b.context})
    rows = [
        ("mode", m.get("mode", "?")),
        ("date", m.get("date", "?")),
        ("commit", "`%s`" % m.get("commit", "?")),
        ("CPU", "%s, %s cores available to the benchmarks (%s online)" % (m.get("cpu"), m.get("cores"),
                                                                         m.get("cores_online"))),
        ("memory", "%s GiB" % m.get("memory_gib")),
        ("OS", m.get("os", "?")),
        ("virtualization", m.get("virtualization") or "none detected"),
        ("compiler", m.get("compiler", "?")),
        ("build", "%s (`%s`); Google Benchmark library: %s build" % (m.get("build_type"), m.get("build_dir"),
                                                                     ", ".join(gbench_build) or "?")),
        ("GPU", m.get("gpu", "none")),
        ("devices (`hetrt demo`)", devices),
        ("micro toolchain", "%s; %s" % (m.get("arm_gcc") or "no arm-none-eabi-gcc", m.get("qemu") or "no QEMU")),
        ("load average at the start", ", ".join(str(x) for x in m.get("load_avg", []))),
    ]
    return ["| | |", "|---|---|"] + ["| %s | %s |" % r for r in rows] + [""]


def _source_line(m):
    return ("Measured by `scripts/figures.sh` on %s, %s cores, %s, commit `%s` (commands, raw results and the "
            "machine in [`docs/figures.md`](docs/figures.md)). Mode: %s." % (m.get("cpu"), m.get("cores"),
                                                                            m.get("date"), m.get("commit", "?")[:12],
                                                                            m.get("mode", "?")))


def render_doc(m, sections, benches, devices):
    out = ["# Figures", "",
           "Produced by `scripts/figures.sh`; do not edit by hand, run it again. Every ratio divides two results "
           "of the same run of one benchmark binary (never a number from another run or machine); where a bench "
           "interleaves its variants, each iteration runs all of them in a shuffled order.", "",
           "**Mode: %s**" % m.get("mode", "?"), ""]
    out += _machine_lines(m, benches, devices)
    for s in sections:
        out += s.render("doc")
    return "\n".join(out).rstrip() + "\n"


_BLOCK = re.compile(r"(<!-- figures:(\w+)(?: (readme|page|doc))?[^>]*-->\n)(.*?)(<!-- /figures:\2 -->)", re.S)


def update_blocks(text, m, sections, path):
    by_key = {s.key: s for s in sections}

    def replace(match):
        key, form = match.group(2), match.group(3) or "readme"
        if key == "source":
            body = [_source_line(m)]
        elif key in by_key:
            body = by_key[key].render(form)
        else:
            raise SystemExit("%s: unknown figures block '%s'" % (path, key))
        return match.group(1) + "\n".join(body).strip() + "\n" + match.group(5)

    return _BLOCK.sub(replace, text)


def render(args):
    raw = RawFolder(args.raw)
    with open(os.path.join(args.raw, "machine.json"), encoding="utf-8") as f:
        m = json.load(f)
    sections = [make(raw) for make in figures_sections.ALL]
    benches = []
    for name in sorted(os.listdir(args.raw)):
        if name.endswith(".json") and name != "machine.json":
            try:
                benches.append(raw.bench(name[:-5]))
            except Exception:  # reported by its section
                pass
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(render_doc(m, sections, benches, _devices(raw)))
    for path in args.update:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        updated = update_blocks(text, m, sections, path)
        if updated != text:
            with open(path, "w", encoding="utf-8") as f:
                f.write(updated)
    missing = [(s.key, why) for s in sections if s.required for why in s.missing]
    for key, why in missing:
        print("figures: %s: not measured: %s" % (key, why), file=sys.stderr)
    return 1 if missing and not args.allow_missing else 0


def main():
    parser = argparse.ArgumentParser(description="docs/figures.md from scripts/figures.sh's raw results")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("machine")
    p.add_argument("--build", required=True)
    p.add_argument("--mode", required=True)
    p = sub.add_parser("render")
    p.add_argument("--raw", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--update", action="append", default=[])
    p.add_argument("--allow-missing", action="store_true")
    args = parser.parse_args()
    if args.command == "machine":
        print(json.dumps(machine(args.build, args.mode), indent=2))
        return 0
    return render(args)


if __name__ == "__main__":
    sys.exit(main())
