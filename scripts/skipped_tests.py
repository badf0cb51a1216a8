#!/usr/bin/env python3
"""Prints the tests a ctest run skipped and why, as a table.

Reads the JUnit file that `ctest --output-junit` wrote (ctest marks a skip,
by SKIP_RETURN_CODE or GoogleTest's [  SKIPPED ], as status="notrun"). The
reason is the line after "Skipped" in the test's output (GoogleTest prints
"<file>:<line>: Skipped" and then the message; tests/require/missing.sh does
the same), else the output's last line."""
import re
import sys
import xml.etree.ElementTree as ET


def reason_of(output):
    reasons = re.findall(r": Skipped\n(.*)", output)
    if reasons:
        more = f" (+{len(reasons) - 1} more)" if len(reasons) > 1 else ""
        return reasons[0].strip() + more
    lines = [line for line in output.splitlines() if line.strip()]
    return lines[-1].strip() if lines else "(no reason printed)"


def main(junit_path):
    rows = []
    for case in ET.parse(junit_path).getroot().iter("testcase"):
        if case.get("status") != "notrun" or case.find("skipped") is None:
            continue
        out = case.find("system-out")
        rows.append((case.get("name"), reason_of(out.text if out is not None and out.text else "")))
    print(f"skipped tests: {len(rows)}")
    if rows:
        width = max(len(n) for n, _ in rows)
        for n, r in sorted(rows):
            print(f"  {n.ljust(width)}  {r[:160]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "build/ctest-junit.xml"))
