"""Shared helpers: where the TVM fixtures are, what they expect, and the
devices a fixture needs."""

import json
import os
import pathlib
import re

import numpy as np
import pytest

import hetrt

REPO = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = pathlib.Path(os.environ.get("HETRT_FIXTURES", REPO.parent / "shared" / "fixtures")) / "tvm-0.18"


def fixture_dir(name):
    path = FIXTURES / name
    if not path.is_dir():
        pytest.skip(f"fixture {path} not present (set HETRT_FIXTURES)")
    return path


def fixture_names():
    """Every model folder with a meta.json (MLF archives are listed apart)."""
    if not FIXTURES.is_dir():
        return []
    return sorted(p.name for p in FIXTURES.iterdir() if (p / "meta.json").is_file() and p.name != "mlf")


def meta(name):
    return json.loads((fixture_dir(name) / "meta.json").read_text())


def tolerances(meta_json):
    t = meta_json.get("tolerances", {})
    chosen = t.get("recommended_for_new_runtime") or t.get("self_check_same_device") or {"rtol": 1e-5, "atol": 1e-6}
    return chosen["rtol"], chosen["atol"]


def factory_devices(meta_json):
    """The devices TVM's factory default() was called with: ["cpu(0)", "opencl(0)"]."""
    names = meta_json.get("device_order_for_factory_default") or ["cpu(0)"]
    devices = []
    for name in names:
        kind, index = re.fullmatch(r"(\w+)\((\d+)\)", name).groups()
        devices.append(hetrt.device(kind, int(index)))
    return devices


def require_devices(devices):
    for d in devices:
        if not d.exist:
            pytest.skip(f"{d} unavailable: {d.unavailable_reason}")


def assert_outputs(module, expected, rtol, atol):
    """Output i against expected["output_i"] (reshaped: MLF outputs may be flat)."""
    assert module.get_num_outputs() == len(expected)
    for i in range(module.get_num_outputs()):
        want = expected[f"output_{i}"]
        got = module.get_output(i).numpy()
        assert got.size == want.size and got.dtype == want.dtype
        np.testing.assert_allclose(got.reshape(want.shape), want, rtol=rtol, atol=atol)


def run_python(code, **env):
    """Runs `code` in a fresh interpreter (same PYTHONPATH, extra environment);
    returns the completed process."""
    import subprocess
    import sys
    import textwrap

    # The package this process imported, by absolute path (the child runs elsewhere).
    package_root = str(pathlib.Path(hetrt.__file__).resolve().parent.parent)
    full_env = dict(os.environ, HETRT_FIXTURES=str(FIXTURES.parent), PYTHONPATH=package_root)
    full_env.update(env)
    # cwd: not a folder holding a hetrt/ package, which `-c` would import first.
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=full_env, capture_output=True,
                          text=True, timeout=300, cwd=os.path.dirname(sys.executable))
