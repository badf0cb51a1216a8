"""Every TVM fixture through Python: deploy.so and the graph.json + lib.so +
params triple (graph), deploy.so (AOT), and the Model Library Format
archives; outputs against the fixture's expected outputs within meta.json's
tolerances. Fixtures for devices not present here skip and say why."""

import numpy as np
import pytest

import hetrt
from conftest import (assert_outputs, factory_devices, fixture_dir, fixture_names, meta, require_devices,
                      tolerances)

MODELS = fixture_names()


def model_case(name):
    m = meta(name)
    devices = factory_devices(m)
    require_devices(devices)
    folder = fixture_dir(name)
    return (m, devices, hetrt.load_param_dict(folder / "inputs.params"),
            hetrt.load_param_dict(folder / "outputs.params"))


@pytest.mark.parametrize("name", MODELS)
def test_deploy_so(name):
    m, devices, inputs, expected = model_case(name)
    lib = hetrt.load(fixture_dir(name) / "deploy.so")
    module = lib.create(devices)
    module.run(**inputs)
    assert_outputs(module, expected, *tolerances(m))


@pytest.mark.parametrize("name", MODELS)
def test_graph_triple(name):
    m, devices, inputs, expected = model_case(name)
    folder = fixture_dir(name)
    if not (folder / "graph.json").is_file():
        pytest.skip(f"{name} has no graph.json (executor {m['executor']})")
    params = folder / "params.params"
    if not params.is_file():  # resnet18 leaves it out: the same bytes are inside deploy.so
        params = hetrt.save_param_dict({})
    lib = hetrt.load(folder / "lib.so", graph=folder / "graph.json", params=params)
    module = hetrt.GraphModule(lib, devices)
    if not (folder / "params.params").is_file():
        module.share_params(hetrt.load(folder / "deploy.so").create(devices))
    module.set_input(**inputs)
    module.run()
    assert_outputs(module, expected, *tolerances(m))


@pytest.mark.parametrize("options", [{"sequential": True}, {"staged_copies": True},
                                     {"sequential": True, "staged_copies": True}])
def test_hetero_opencl_modes(options):
    m, devices, inputs, expected = model_case("hetero_opencl_seed")
    module = hetrt.load(fixture_dir("hetero_opencl_seed") / "deploy.so").create(devices, **options)
    for _ in range(3):
        module.run(**inputs)
        assert_outputs(module, expected, *tolerances(m))


MLF_ARCHIVES = ["add3_graph_mlf.tar", "add3_aot_mlf.tar", "mlp_graph_mlf.tar", "mlp_aot_mlf.tar"]


def mlf_case(archive):
    folder = fixture_dir("mlf")
    model = archive.split("_")[0]
    return (hetrt.load(folder / archive), hetrt.load_param_dict(folder / f"{model}_inputs.params"),
            hetrt.load_param_dict(folder / f"{model}_outputs.params"))


@pytest.mark.parametrize("archive", MLF_ARCHIVES)
def test_mlf_in_process(archive):
    mlf, inputs, expected = mlf_case(archive)
    assert mlf.metadata["model_name"] == archive.split("_")[0]
    module = mlf.create()
    assert module.kind == "mlf"
    module.run(**inputs)
    assert_outputs(module, expected, 1e-5, 1e-6)


def test_mlf_on_micro_device():
    mlf, inputs, expected = mlf_case("mlp_aot_mlf.tar")
    module = hetrt.GraphModule(mlf, hetrt.micro())
    assert module.kind == "micro"
    module.run(**inputs)
    assert_outputs(module, expected, 1e-5, 1e-6)


def test_expected_outputs_agree_with_npy():
    """The param-dict reader against numpy's own .npy reader."""
    for name in MODELS:
        folder = fixture_dir(name)
        if (folder / "output_0.npy").is_file():
            np.testing.assert_array_equal(hetrt.load_param_dict(folder / "outputs.params")["output_0"],
                                          np.load(folder / "output_0.npy"))
