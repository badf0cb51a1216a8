#!/usr/bin/env python3
"""Checks deploy/Dockerfile's run stages without a container: every shared
library that the installed hetrt (CLI, core, plugins) links must come from a
package that stage (or the stage it starts from) installs, from one of their
dependencies, or from the base image (Debian's "required" packages, which
debian:*-slim holds). A library missing there would make the container fail
when a pod starts. serve-cpu carries no OpenCL or Vulkan plugin; serve
carries every plugin. (scripts/test_container.sh builds and runs the images.)

Usage: dockerfile_runtime_test.py DOCKERFILE BUILD_DIR CMAKE
Installs BUILD_DIR into a temporary prefix (as the build stage does with
`cmake --install`), runs ldd on every ELF file there, and maps each resolved
library to its Debian package with dpkg -S."""
import os
import re
import subprocess
import sys
import tempfile


# Run stages and the installed files each must carry (by name).
RUN_STAGES = {
    "serve-cpu": lambda path: "opencl" not in path and "vulkan" not in path,
    "serve": lambda path: True,
}


def stage_packages(dockerfile):
    """{stage name: packages its `apt-get install` lines and its parent stages' install}."""
    text = open(dockerfile, encoding="utf-8").read().replace("\\\n", " ")
    stages, parents = {}, {}
    for block in re.split(r"^FROM ", text, flags=re.M)[1:]:
        m = re.match(r"(\S+)(?:\s+AS\s+(\S+))?", block, flags=re.I)
        name = m.group(2) or f"stage{len(stages)}"
        parents[name] = m.group(1)
        packages = []
        for line in block.splitlines():
            if "apt-get install" in line:
                words = line.split("apt-get install", 1)[1].split("&&")[0].split()
                packages += [w for w in words if not w.startswith("-")]
        stages[name] = packages
    def closure(name):
        parent = parents[name]
        return stages[name] + (closure(parent) if parent in stages else [])
    return {name: closure(name) for name in stages}


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


def packages_of(paths):
    """{library path: its Debian package} for those dpkg knows, in one dpkg -S
    (a process per library took 11 of the test's 17 s). Each path is also
    asked in its other usr-merge form (/lib vs /usr/lib)."""
    forms = {}
    for path in paths:
        for candidate in (path, path.replace("/usr/lib/", "/lib/", 1), path.replace("/lib/", "/usr/lib/", 1)):
            forms.setdefault(candidate, path)
    # Exits 1 when some form is unknown (most usr-merge twins are): only the answers count.
    out = subprocess.run(["dpkg", "-S", *forms], capture_output=True, text=True).stdout
    found = {}
    for line in out.splitlines():  # "libfoo1:amd64: /usr/lib/.../libfoo.so.1" ("a, b: path" when shared)
        owners, sep, candidate = line.rpartition(": ")
        if sep and candidate in forms:
            found.setdefault(forms[candidate], owners.split(",")[0].split(":")[0].strip())
    return found


def main(dockerfile, build_dir, cmake):
    packages = stage_packages(dockerfile)
    missing_stages = [name for name in RUN_STAGES if not packages.get(name)]
    if missing_stages:
        print(f"{dockerfile}: no apt-get install in stage(s) {', '.join(missing_stages)}")
        return 1
    base = base_image_packages()
    with tempfile.TemporaryDirectory() as prefix:
        subprocess.run([cmake, "--install", build_dir, "--prefix", prefix], check=True, capture_output=True)
        libraries = linked_libraries(prefix)
        if not any(p.endswith("bin/hetrt") for users in libraries.values() for p in users):
            print("ldd found nothing linked by bin/hetrt: is the install tree complete?")
            return 1
        problems = []
        owners = packages_of([lib for lib in libraries if not lib.startswith("not found")])
        for stage, carries in RUN_STAGES.items():
            available = dependency_closure(packages[stage]) | base
            for lib, users in sorted(libraries.items()):
                users = sorted(u for u in set(users) if carries(u))
                if not users:
                    continue
                package = owners.get(lib)
                if package is None or package not in available:
                    problems.append(f"{stage}: {lib} (package {package or '?'}) used by {', '.join(users[:3])}")
            print(f"{stage} installs: {' '.join(packages[stage])}")
    print(f"{len(libraries)} libraries linked by the installed files")
    if problems:
        print("not provided by the run stages of " + dockerfile + ":")
        for p in problems:
            print("  " + p)
        return 1
    print("every one comes from its run stage's packages, their dependencies or the base image")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
