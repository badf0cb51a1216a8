#!/usr/bin/env python3
"""Checks deploy/Dockerfile's run stage without Docker: every shared library
that the installed hetrt (CLI, core, plugins) links must come from a package
that stage installs, from one of their dependencies, or from the base image
(Debian's "required" packages, which debian:*-slim holds). A library missing
there would make the container fail when a pod starts.

Usage: dockerfile_runtime_test.py DOCKERFILE BUILD_DIR CMAKE
Installs BUILD_DIR into a temporary prefix (as the build stage does with
`cmake --install`), runs ldd on every ELF file there, and maps each resolved
library to its Debian package with dpkg -S."""
import os
import re
import subprocess
import sys
import tempfile


def run_stage_packages(dockerfile):
    """The packages of the last stage's `apt-get install`."""
    text = open(dockerfile, encoding="utf-8").read().replace("\\\n", " ")
    last_stage = re.split(r"^FROM ", text, flags=re.M)[-1]
    packages = []
    for line in last_stage.splitlines():
        if "apt-get install" not in line:
            continue
        words = line.split("apt-get install", 1)[1].split("&&")[0].split()
        packages += [w for w in words if not w.startswith("-")]
    return packages


def dependency_closure(packages):
    out = subprocess.run(
        ["apt-cache", "depends", "--recurse", "--no-recommends", "--no-suggests", "--no-conflicts",
         "--no-breaks", "--no-replaces", "--no-enhances", *packages],
        check=True, capture_output=True, text=True).stdout
    # Top-level lines are package names; dependencies are indented.
    names = {line.strip() for line in out.splitlines() if line and not line[0].isspace()}
    return {n.split(":")[0] for n in names if not n.startswith("<")}


def base_image_packages():
    out = subprocess.run(["dpkg-query", "-W", "-f=${Package} ${Priority} ${Essential}\n"],
                         check=True, capture_output=True, text=True).stdout
    base = set()
    for line in out.splitlines():
        name, priority, essential = (line.split() + ["", ""])[:3]
        if priority == "required" or essential == "yes":
            base.add(name)
    return base | dependency_closure(sorted(base))


def is_elf(path):
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def linked_libraries(prefix):
    """{resolved library path: [installed files that link it]}; unresolved ones as 'not found: name'."""
    libraries = {}
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(prefix, "lib"))
    for root, _, files in os.walk(prefix):
        for name in files:
            path = os.path.join(root, name)
            if os.path.islink(path) or not is_elf(path):
                continue
            out = subprocess.run(["ldd", path], capture_output=True, text=True, env=env).stdout
            for line in out.splitlines():
                m = re.match(r"\s*(\S+) => (\S+|not found)", line)
                if not m:
                    continue
                lib = "not found: " + m.group(1) if m.group(2) == "not found" else os.path.realpath(m.group(2))
                if not lib.startswith(prefix):
                    libraries.setdefault(lib, []).append(os.path.relpath(path, prefix))
    return libraries


def package_of(path):
    for candidate in (path, path.replace("/usr/lib/", "/lib/", 1), path.replace("/lib/", "/usr/lib/", 1)):
        out = subprocess.run(["dpkg", "-S", candidate], capture_output=True, text=True)
        if out.returncode == 0:
            return out.stdout.split(":")[0].strip()
    return None


def main(dockerfile, build_dir, cmake):
    wanted = run_stage_packages(dockerfile)
    if not wanted:
        print(f"{dockerfile}: no apt-get install in the last stage")
        return 1
    available = dependency_closure(wanted) | base_image_packages()
    with tempfile.TemporaryDirectory() as prefix:
        subprocess.run([cmake, "--install", build_dir, "--prefix", prefix], check=True, capture_output=True)
        libraries = linked_libraries(prefix)
        if not any(p.endswith("bin/hetrt") for users in libraries.values() for p in users):
            print("ldd found nothing linked by bin/hetrt: is the install tree complete?")
            return 1
        problems = []
        for lib, users in sorted(libraries.items()):
            package = None if lib.startswith("not found") else package_of(lib)
            if package is None or package not in available:
                problems.append(f"{lib} (package {package or '?'}) used by {', '.join(sorted(set(users))[:3])}")
    print(f"run stage installs: {' '.join(wanted)}")
    print(f"{len(libraries)} libraries linked by the installed files")
    if problems:
        print("not provided by the run stage of " + dockerfile + ":")
        for p in problems:
            print("  " + p)
        return 1
    print("every one comes from the run stage's packages, their dependencies or the base image")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
