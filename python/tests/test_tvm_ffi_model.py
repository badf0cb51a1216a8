"""A model library in TVM v0.23+'s form (tvm-ffi ABI, V2 image), made by the
tests' make_ffi_model, opened by hetrt.load like any other model."""

import os
import pathlib
import subprocess

import numpy as np
import pytest

import hetrt


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    build = os.environ.get("HETRT_BUILD_DIR")
    if not build:
        pytest.fail("HETRT_BUILD_DIR not set (ctest sets it)")
    path = tmp_path_factory.mktemp("ffi") / "model.so"
    subprocess.run([str(pathlib.Path(build) / "bin" / "make_ffi_model"), str(path)], check=True)
    return path


def test_loads_and_runs_as_a_relax_model(model_path):
    lib = hetrt.load(model_path)
    assert lib.type_key == "relax.VMExecutable"
    assert [m.type_key for m in lib.imports] == ["library"]
    vm = hetrt.load(model_path, devices=[hetrt.cpu()])
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    y = vm["main"](x)
    np.testing.assert_array_equal(y.numpy(), x + np.array([0.5, 1, 1.5, 2], np.float32))


def test_bytecode_checks_refuse_a_wrong_shape(model_path):
    vm = hetrt.load(model_path, devices=[hetrt.cpu()])
    with pytest.raises(hetrt.Error, match="ErrorContext"):
        vm["main"](np.zeros((3, 4), np.float32))
