"""Errors reach Python as exceptions carrying the core's message: the same
text `hetrt` (the CLI) prints for the same mistake."""

import os
import pathlib
import shutil
import subprocess

import numpy as np
import pytest

import hetrt
from conftest import REPO, fixture_dir, run_python

CLI = pathlib.Path(os.environ.get("HETRT_CLI", REPO / "build" / "bin" / "hetrt"))


def cli_error(*args, **env):
    """The message of `hetrt: error: MESSAGE`, as the CLI prints it."""
    if not CLI.is_file():
        pytest.skip(f"the hetrt CLI is not built at {CLI} (set HETRT_CLI)")
    done = subprocess.run([str(CLI), *map(str, args)], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, **env))
    assert done.returncode != 0
    line = next(l for l in done.stderr.splitlines() if l.startswith("hetrt: error: "))
    return line[len("hetrt: error: "):]


def add3():
    return hetrt.load(fixture_dir("add3") / "deploy.so").create()


def test_error_classes():
    assert issubclass(hetrt.Error, RuntimeError)
    assert issubclass(hetrt.InvalidArgumentError, hetrt.Error) and issubclass(hetrt.InvalidArgumentError, ValueError)
    assert issubclass(hetrt.NotFoundError, LookupError) and issubclass(hetrt.OutOfRangeError, IndexError)


def test_bad_path(tmp_path):
    missing = tmp_path / "missing.so"
    with pytest.raises(hetrt.Error) as error:
        hetrt.load(missing)
    assert str(error.value) == cli_error("run", missing)
    assert str(missing) in str(error.value)


def test_not_a_library(tmp_path):
    text = tmp_path / "notes.so"
    text.write_text("not an ELF file")
    with pytest.raises(hetrt.Error) as error:
        hetrt.load(text)
    assert str(error.value) == cli_error("run", text)


def test_bad_graph_and_params(tmp_path):
    folder = fixture_dir("add3")
    graph = tmp_path / "graph.json"
    graph.write_text('{"nodes": []}')
    with pytest.raises(hetrt.Error) as error:
        hetrt.load(folder / "lib.so", graph=graph)
    assert str(graph) in str(error.value)
    with pytest.raises(hetrt.Error) as error:
        hetrt.load(folder / "lib.so", graph=folder / "graph.json", params=b"\x00" * 12)
    assert error.value.code in ("DATA_LOSS", "INVALID_ARGUMENT")
    m = add3()
    with pytest.raises(hetrt.Error):
        m.load_params(b"garbage")


@pytest.mark.parametrize("bad", [np.ones((1, 11), np.float32), np.ones((1, 10), np.float64)],
                         ids=["shape", "dtype"])
def test_wrong_input(bad, tmp_path):
    m = add3()
    with pytest.raises(hetrt.InvalidArgumentError) as error:
        m.set_input("a", bad)
    assert error.value.code == "INVALID_ARGUMENT"
    npy = tmp_path / "bad.npy"
    np.save(npy, bad)
    assert str(error.value) in cli_error("run", fixture_dir("add3") / "deploy.so", "--input", f"a={npy}")
    with pytest.raises(hetrt.InvalidArgumentError) as zero_copy:
        m.set_input_zero_copy("a", bad)
    assert "set_input" in str(zero_copy.value)
    with pytest.raises(hetrt.InvalidArgumentError):
        m.run(a=bad)


def test_unknown_names_and_indices():
    m = add3()
    with pytest.raises(hetrt.NotFoundError, match="no input named 'nope'"):
        m.set_input("nope", np.zeros((1, 10), np.float32))
    with pytest.raises(IndexError, match="out of range"):
        m.get_output(5)
    with pytest.raises(hetrt.OutOfRangeError):
        m.set_input(7, np.zeros((1, 10), np.float32))
    with pytest.raises(hetrt.Error, match="read-only"):
        out = np.zeros((1, 10), np.float32)
        out.flags.writeable = False
        m.set_output_zero_copy(0, out)


@pytest.fixture
def only_cpu_plugin(tmp_path):
    """Environment for a process whose core finds only the CPU plugin: a copy of
    the core library with just that plugin beside it, first on the library path."""
    cpu_plugin = pathlib.Path(next(p["path"] for p in hetrt.plugins() if p["name"] == "cpu"))
    core = cpu_plugin.parent.parent / "libhetrt_core.so"
    (tmp_path / "hetrt-plugins").mkdir()
    shutil.copy(core, tmp_path / core.name)
    shutil.copy(cpu_plugin, tmp_path / "hetrt-plugins" / cpu_plugin.name)
    return {"LD_LIBRARY_PATH": str(tmp_path)}


@pytest.mark.parametrize("model", ["hetero_opencl_seed", "hetero_cuda_seed"])
def test_missing_plugin(model, only_cpu_plugin):
    path = fixture_dir(model) / "deploy.so"
    done = run_python(f"""
        import hetrt
        assert [p["name"] for p in hetrt.plugins()] == ["cpu"], hetrt.plugins()
        try:
            hetrt.load({str(path)!r})
        except hetrt.NotFoundError as e:
            print(e)
    """, **only_cpu_plugin)
    assert done.returncode == 0, done.stderr
    message = done.stdout.strip()
    assert "no plugin provides type_key" in message
    assert message == cli_error("run", path, **only_cpu_plugin)


def test_missing_device():
    device = hetrt.device("opencl", 9)
    assert not device.exist
    with pytest.raises(hetrt.NotFoundError) as error:
        hetrt.load(fixture_dir("mlp") / "deploy.so").create([hetrt.cpu(), device])
    assert str(error.value) == device.unavailable_reason
    assert "opencl:9" in str(error.value)


def test_profile_needs_a_graph_executor():
    lib = hetrt.load(fixture_dir("aot_cpp_add3") / "deploy.so")
    m = lib.create()
    assert m.kind == "aot"
    with pytest.raises(hetrt.UnimplementedError, match="graph executor"):
        m.profile(repeat=1)
