#!/usr/bin/env python3
"""Prints the tests the last ctest run skipped and why, as a table.

Reads <build>/Testing/Temporary/LastTest.log: a skipped GoogleTest prints
"<file>:<line>: Skipped" and the reason on the next line."""
import re
import sys


def main(build_dir):
    log = open(f"{build_dir}/Testing/Temporary/LastTest.log", encoding="utf-8", errors="replace").read()
    rows = []
    for block in re.split(r"\n(?=\d+/\d+ Testing: )", log):
        name = re.search(r"^\d+/\d+ Test: (.+)$", block, re.M)
        if not name or not re.search(r"^Test Pass Reason:", block, re.M):
            continue
        reasons = re.findall(r": Skipped\n(.*)", block)
        reason = reasons[0].strip() if reasons else "(no reason printed)"
        rows.append((name.group(1), reason + (f" (+{len(reasons) - 1} more)" if len(reasons) > 1 else "")))
    print(f"skipped tests: {len(rows)}")
    if rows:
        width = max(len(n) for n, _ in rows)
        for n, r in sorted(rows):
            print(f"  {n.ljust(width)}  {r[:160]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "build"))
