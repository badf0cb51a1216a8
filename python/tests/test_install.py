"""The installed package (what `cmake --install --component python` and pip
lay out) is self-contained: it loads its own core library and finds the
plugins beside it, with nothing from the build tree on the paths."""

import os
import pathlib
import subprocess

import pytest

from conftest import run_python


def test_installed_package_runs_a_model(tmp_path):
    build = os.environ.get("HETRT_BUILD_DIR")
    if not build:
        pytest.skip("HETRT_BUILD_DIR not set (ctest sets it)")
    cmake = os.environ.get("HETRT_CMAKE", "cmake")
    subprocess.run([cmake, "--install", build, "--component", "python", "--prefix", str(tmp_path)],
                   check=True, capture_output=True, timeout=120)
    package = tmp_path / "hetrt"
    done = run_python("""
        import os, numpy as np, hetrt
        print(hetrt.__file__)
        for p in hetrt.plugins():
            print(p["path"])
        a = np.ones((1, 10), np.float32)
        m = hetrt.load(os.environ["HETRT_FIXTURES"] + "/tvm-0.18/add3/deploy.so").create()
        m.run(a=a, b=a, c=a)
        assert (m.get_output(0).numpy() == 3).all()
        # The tvm-ffi shim (libtvm_ffi.so) is installed beside the core.
        kernels = hetrt.load_kernels(os.environ["HETRT_BUILD_DIR"] + "/test-kernels/libffi_kernels.so")
        y = np.zeros(3, np.float32)
        kernels["add_one"](np.arange(3, dtype=np.float32), y)
        assert y.tolist() == [1, 2, 3]
    """, PYTHONPATH=str(tmp_path), LD_LIBRARY_PATH="")
    assert done.returncode == 0, done.stderr
    paths = [pathlib.Path(line) for line in done.stdout.split()]
    assert paths[0] == package / "__init__.py"
    assert any(p.name == "libhetrt_plugin_cpu.so" for p in paths[1:])
    assert all(p.parent == package / "hetrt-plugins" for p in paths[1:])
