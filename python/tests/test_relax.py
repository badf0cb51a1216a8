"""Relax executables from Python: hetrt.load gives a VirtualMachine whose
functions are called by name (TVM's relax.VirtualMachine), on every Relax
fixture's devices, with the stateful calls, symbolic batches and errors."""

import json
import os
import pathlib

import numpy as np
import pytest

import hetrt
from conftest import FIXTURES

RELAX = FIXTURES.parent / "tvm-0.18-relax"


def required(what):
    wanted = os.environ.get("HETRT_REQUIRE", "").split(",")
    return ("all" in wanted or what in wanted) and f"-{what}" not in wanted


def missing(what, message):
    if required(what):
        pytest.fail(f"{what} is required (HETRT_REQUIRE) but missing: {message}")
    pytest.skip(message)


def relax_dir(name):
    path = RELAX / name
    if not path.is_dir():
        missing("fixtures", f"Relax fixture {path} not present (set HETRT_FIXTURES)")
    return path


def relax_names():
    return sorted(p.name for p in RELAX.iterdir() if (p / "meta.json").is_file()) if RELAX.is_dir() else []


def devices_of(meta):
    out = []
    for d in meta["vm_initialization"]["devices"]:
        dev = hetrt.device(d["device_type"], d["device_id"])
        if not dev.exist:
            missing(dev.type_name, f"{dev} unavailable: {dev.unavailable_reason}")
        out.append(dev)
    return out


@pytest.mark.parametrize("name", relax_names() or ["(none)"])
def test_every_relax_fixture_matches_through_call_and_stateful_api(name):
    d = relax_dir(name)
    meta = json.loads((d / "meta.json").read_text())
    vm = hetrt.load(d / "deploy.so", devices=devices_of(meta))
    assert isinstance(vm, hetrt.VirtualMachine)
    entry = meta["entry_function"]
    assert vm.get_function_param_names(entry) == meta["function_params"]
    weights = {}
    if meta["weights"]["kind"] == "parameters":
        weights = dict(hetrt.load_param_dict(d / meta["weights"]["file"]))
    for case in meta["cases"]:
        inputs = dict(hetrt.load_param_dict(d / case["inputs_file"]))
        expected = hetrt.load_param_dict(d / case["outputs_file"])
        args = {**inputs, **weights}
        out = vm[entry](**args)
        np.testing.assert_allclose(np.from_dlpack(out), expected["output_0"], rtol=1e-4, atol=1e-5)
        # tvm.relax.VirtualMachine's stateful form, positional this time.
        vm.set_input(entry, *[args[p] for p in meta["function_params"]])
        vm.invoke_stateful(entry)
        np.testing.assert_allclose(vm.get_outputs(entry).numpy(), expected["output_0"], rtol=1e-4, atol=1e-5)


def test_symbolic_batch_sizes_the_fixture_was_not_made_with():
    d = relax_dir("relax_dyn_batch")
    vm = hetrt.load(d / "deploy.so").create()  # the CPU by default
    x = hetrt.load_param_dict(d / "inputs_n5.params")["data"]
    want = hetrt.load_param_dict(d / "outputs_n5.params")["output_0"]
    for rows in (3, 1, 5):
        y = vm["main"](x[:rows]).numpy()
        assert y.shape == (rows, 10)
        np.testing.assert_allclose(y, want[:rows], rtol=1e-4, atol=1e-5)


def test_errors_are_exceptions_with_the_core_message():
    d = relax_dir("relax_dyn_batch")
    vm = hetrt.VirtualMachine(hetrt.load(d / "deploy.so", allow_missing_plugins=True), [hetrt.cpu()], "naive")
    with pytest.raises(hetrt.Error, match="784"):
        vm["main"](np.zeros((2, 783), np.float32))
    with pytest.raises(hetrt.Error, match="float32"):
        vm["main"](np.zeros((2, 784), np.int32))
    with pytest.raises(TypeError, match="missing data"):
        vm["main"]()
    with pytest.raises(KeyError, match="no function 'forward'"):
        vm["forward"]
    with pytest.raises(ValueError, match="needs set_input"):
        vm.invoke_stateful("main")
    assert vm["main"](np.ones((2, 784), np.float32)).shape == (2, 10)  # still usable


def test_a_graph_model_with_devices_comes_back_ready_to_run():
    mlp = FIXTURES / "mlp"
    if not mlp.is_dir():
        missing("fixtures", f"{mlp} not present")
    m = hetrt.load(mlp / "deploy.so", devices=[hetrt.cpu()])
    assert isinstance(m, hetrt.GraphModule)
