#!/usr/bin/env python3
"""Checks hetrt's folder layering and file-level circles (docs/architecture.md).

Core folders depend in one direction:
    base -> formats -> device -> tvm_abi -> plugin_host -> module -> relax -> exec -> llm
A file in core/<layer>/, core/include/hetrt/<layer>/ or core/internal/hetrt/<layer>/
may include headers of its own layer or a lower one, never a higher one. A
public header (core/include, sdk/include, toolchain/include: installed) never includes an internal one
(core/internal, never installed): an install would not compile. `hetrt/plugin_abi.h` (the
ABI itself) is below everything. Plugins include only the ABI header and the
SDK (hetrt/sdk/...), never the core's own headers -- except the header-only
value types Status/Result (hetrt/base/status.h), which some plugins use inside
themselves without linking the core (--no-undefined proves it).

A "unit" is a source file and its headers (x.cc + x.h, and x_impl.h where x
keeps its state out of its public header); unit A depends on unit
B when a file of A includes B's header. Any cycle of units is reported.

Exit status 1 with one line per problem; 0 and a summary otherwise.
"""
import os
import re
import sys

LAYERS = ["base", "formats", "device", "tvm_abi", "plugin_host", "module", "relax", "exec", "llm"]
RANK = {name: i for i, name in enumerate(LAYERS)}
INSTALLED = ("core/include/", "sdk/include/", "toolchain/include/")  # the headers an install carries
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_of(path):
    """The layer of a core file (relative to the repo), or None."""
    parts = path.split("/")
    if parts[0] != "core":
        return None
    if parts[1] in ("include", "internal") and len(parts) > 3 and parts[2] == "hetrt":
        return parts[3] if parts[3] in RANK else None
    return parts[1] if parts[1] in RANK else None


def resolve(include, including_file, root):
    """The repo-relative path an include names, or None for a system/third-party one."""
    for base in ("core/include", "core/internal", "core", "sdk/include", os.path.dirname(including_file)):
        candidate = os.path.normpath(os.path.join(base, include))
        if os.path.isfile(os.path.join(root, candidate)):
            return candidate
    return None


def unit_of(path):
    stem = os.path.splitext(os.path.basename(path))[0]
    stem = stem.removesuffix("_impl")  # x_impl.h: the private half of x (a pimpl), the same unit
    return (layer_of(path) or path.split("/")[0], stem)


def main(root):
    files = []
    for top in ("core", "plugins", "sdk/include", "toolchain/include"):
        for folder, _, names in os.walk(os.path.join(root, top)):
            for name in names:
                if name.endswith((".h", ".cc", ".c")):
                    files.append(os.path.relpath(os.path.join(folder, name), root))
    problems = []
    edges = {}
    for path in sorted(files):
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            text = f.read()
        own = layer_of(path)
        for include in INCLUDE.findall(text):
            target = resolve(include, path, root)
            if path.startswith("plugins/"):
                allowed = include in ("hetrt/plugin_abi.h", "hetrt/base/status.h") or include.startswith("hetrt/sdk/")
                if include.startswith("hetrt/") and not allowed:
                    problems.append(f"{path}: a plugin includes the core's '{include}' (only hetrt/plugin_abi.h and hetrt/sdk/ are its API)")
                continue
            if target is None or include == "hetrt/plugin_abi.h":
                continue
            if path.startswith(INSTALLED) and target.startswith("core/internal/"):
                problems.append(f"{path}: a public header includes the internal '{include}' (not installed)")
            theirs = layer_of(target)
            if own is None or theirs is None:
                if own is not None and target.startswith("core/"):
                    problems.append(f"{path}: includes '{include}', which belongs to no layer")
                continue
            if RANK[theirs] > RANK[own]:
                problems.append(f"{path} ({own}) includes '{include}' ({theirs}): a lower layer reaches up")
            a, b = unit_of(path), unit_of(target)
            if a != b:
                edges.setdefault(a, set()).add(b)
    # File-level circles among core units.
    state = {}
    stack = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt):] + [nxt]
                problems.append("circle: " + " -> ".join(f"{l}/{s}" for l, s in cycle))
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node)
    for p in problems:
        print(p)
    if problems:
        return 1
    print(f"layers: {len(files)} files in core/, plugins/ and the installed headers, {sum(len(v) for v in edges.values())} unit "
          f"dependencies, all downward ({' -> '.join(LAYERS)}), no circles")
    return 0


def self_test():
    """A made-up tree with one upward include, one circle and one plugin reaching
    into the core must give exactly those three problems."""
    import contextlib
    import io
    import tempfile
    files = {
        "core/include/hetrt/base/a.h": '#include "hetrt/exec/b.h"\n',  # base reaches up into exec
        "core/include/hetrt/exec/b.h": "",
        "core/module/c.cc": '#include "hetrt/module/d.h"\n',  # c <-> d
        "core/include/hetrt/module/c.h": "",
        "core/module/d.cc": '#include "hetrt/module/c.h"\n',
        "core/include/hetrt/module/d.h": "",
        "core/include/hetrt/exec/e.h": '#include "hetrt/exec/f.h"\n',  # public reaches into internal
        "core/internal/hetrt/exec/f.h": "",
        "plugins/x/x.cc": '#include "hetrt/plugin_abi.h"\n#include "hetrt/exec/b.h"\n',
    }
    with tempfile.TemporaryDirectory() as root:
        for path, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
            with open(os.path.join(root, path), "w") as f:
                f.write(text)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            status = main(root)
    lines = out.getvalue().splitlines()
    expected = ["lower layer reaches up", "circle: module/c -> module/d -> module/c", "plugins/x/x.cc: a plugin includes",
                "a public header includes the internal"]
    missing = [e for e in expected if not any(e in line for line in lines)]
    if status != 1 or missing or len(lines) != 4:
        print("self-test failed: status", status, "missing", missing, "output", lines)
        return 1
    print("self-test: the upward include, the circle, the plugin include and the public header reaching into internal/ were all reported")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(self_test())
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")))
