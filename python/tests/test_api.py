"""The API in the shape TVM and ONNX Runtime users know: the module tree,
devices and plugins, names/shapes/dtypes, params, benchmark and profile."""

import json

import numpy as np
import pytest

import hetrt
from conftest import fixture_dir


def test_module_tree():
    lib = hetrt.load(fixture_dir("hetero_opencl_seed") / "deploy.so", allow_missing_plugins=True)
    assert lib.type_key == "GraphExecutorFactory"
    assert lib.module_name == "default"
    assert {"default", "get_graph_json"} <= set(lib.function_names)
    json.loads(lib.graph_json)
    (library,) = lib.imports
    assert library.type_key == "library"
    assert set(library.function_names) == {"tvmgen_default_fused_add", "tvmgen_default_fused_log"}
    assert library.has_function("tvmgen_default_fused_log") and not library.has_function("nope")
    assert [m.type_key for m in library.imports] == ["opencl"]
    assert lib.tree().splitlines()[2].strip().startswith("opencl")


def test_aot_tree():
    lib = hetrt.load(fixture_dir("aot_cpp_add3") / "deploy.so")
    assert lib.type_key == "AotExecutorFactory"
    assert [m.type_key for m in lib.imports] == ["metadata_module"]


def test_devices():
    assert hetrt.device("cpu") == hetrt.cpu() == hetrt.Device(1, 0)
    assert hetrt.device("opencl", 1) == hetrt.device("opencl:1") == hetrt.opencl(1) == (4, 1)
    assert hetrt.vulkan().device_type == 7 and hetrt.cuda().device_type == 2
    assert str(hetrt.device("opencl:1")) == "opencl:1"
    assert hetrt.cpu().exist and hetrt.cpu().unavailable_reason is None
    with pytest.raises(hetrt.Error):
        hetrt.device("tpu")


def test_plugins_report_devices_and_reasons():
    plugins = {p["name"]: p for p in hetrt.plugins()}
    cpu = plugins["cpu"]
    assert cpu["abi"].startswith("2.") and cpu["path"].endswith(".so")
    (cpu_devices,) = cpu["devices"]
    assert cpu_devices["type"] == "cpu" and cpu_devices["count"] >= 1 and cpu_devices["reason"] is None
    for plugin in plugins.values():
        for entry in plugin["devices"]:
            # A device type without devices says why.
            assert (entry["count"] > 0) == (entry["reason"] is None)
    missing = hetrt.device("cuda")
    if not missing.exist:
        assert "cuda" in missing.unavailable_reason
    assert isinstance(hetrt.plugin_problems(), list)


def test_names_shapes_dtypes():
    m = hetrt.load(fixture_dir("mlp") / "deploy.so").create(hetrt.cpu())
    assert m.get_num_inputs() == 5 and m.get_num_outputs() == 1
    assert m.input_names[0] == "data" and m.get_input_index("p0") == 1
    assert m.get_inputs() == [hetrt.IOInfo("data", (1, 784), "float32")]
    assert m.get_outputs()[0].shape == (1, 10) and m.get_outputs()[0].dtype == "float32"
    shapes, dtypes = m.get_input_info()
    assert shapes == {"data": (1, 784)} and dtypes == {"data": "float32"}
    assert m.storage_bytes["cpu:0"] > 0


def test_tvm_style_flow():
    folder = fixture_dir("add3")
    lib = hetrt.load(folder / "deploy.so")
    inputs = hetrt.load_param_dict(folder / "inputs.params")
    m = lib["default"](hetrt.cpu())  # TVM: lib["default"](dev)
    m.run(**inputs)
    np.testing.assert_allclose(m.get_output(0).numpy(), inputs["a"] + inputs["b"] + inputs["c"], rtol=1e-6)
    m = hetrt.GraphModule(lib, hetrt.cpu())
    m.set_input(**inputs)
    m.run()
    out = np.empty((1, 10), np.float32)
    m.get_output(0, out)
    np.testing.assert_allclose(out, inputs["a"] + inputs["b"] + inputs["c"], rtol=1e-6)
    outputs = m(**inputs)  # run and copy every output out
    np.testing.assert_array_equal(outputs[0], out)


def test_triple_from_text_and_bytes():
    folder = fixture_dir("mlp")
    graph = (folder / "graph.json").read_text()
    params = (folder / "params.params").read_bytes()
    inputs = hetrt.load_param_dict(folder / "inputs.params")
    expected = hetrt.load_param_dict(folder / "outputs.params")["output_0"]
    m = hetrt.load(folder / "lib.so", graph=graph, params=params).create()
    m.run(**inputs)
    np.testing.assert_allclose(m.get_output(0).numpy(), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("form", ["bytes", "path", "dict"])
def test_load_params(form):
    folder = fixture_dir("mlp")
    m = hetrt.load(folder / "lib.so", graph=folder / "graph.json").create()
    params = {"bytes": (folder / "params.params").read_bytes(), "path": folder / "params.params",
              "dict": hetrt.load_param_dict(folder / "params.params")}[form]
    m.load_params(params)
    m.run(**hetrt.load_param_dict(folder / "inputs.params"))
    np.testing.assert_allclose(m.get_output(0).numpy(), hetrt.load_param_dict(folder / "outputs.params")["output_0"],
                               rtol=1e-5, atol=1e-6)


def test_param_dict_round_trip():
    params = {"x": np.arange(6, dtype=np.float32).reshape(2, 3), "n": np.array([1, 2], np.int64)}
    back = hetrt.load_param_dict(hetrt.save_param_dict(params))
    assert list(back) == ["x", "n"]
    for name, value in params.items():
        np.testing.assert_array_equal(back[name], value)
        assert back[name].dtype == value.dtype


def test_benchmark():
    m = hetrt.load(fixture_dir("mlp") / "deploy.so").create()
    m.run(**hetrt.load_param_dict(fixture_dir("mlp") / "inputs.params"))
    result = m.benchmark(repeat=20, number=3, warmup=2)
    assert len(result.results) == 20
    assert 0 < result.min <= result.median <= result.p99 <= result.max
    assert result.min <= result.mean <= result.max and result.std >= 0
    assert "median" in repr(result)


def test_profile_and_trace(tmp_path):
    name = "hetero_opencl_seed"
    devices = [hetrt.cpu(), hetrt.opencl()]
    if not devices[1].exist:
        name, devices = "mlp", [hetrt.cpu()]
    folder = fixture_dir(name)
    m = hetrt.load(folder / "deploy.so").create(devices)
    m.set_input(**hetrt.load_param_dict(folder / "inputs.params"))
    trace = tmp_path / "trace.json"
    profile = m.profile(repeat=10, warmup=1, trace=trace)
    json.dumps(profile)  # plain data
    assert profile["runs"] == 10 and profile["mode"] == "asynchronous" and profile["trace"] == str(trace)
    kernels = [n["kernel"] for n in profile["nodes"]]
    assert all(k and (k.startswith("tvmgen_") or k == "__copy") for k in kernels)
    for n in profile["nodes"]:
        assert 0 <= n["median_us"] <= n["p99_us"] and n["waiting_us"] >= 0 and n["lane"] in profile["busy_ms_per_lane"]
    assert profile["run_ms"]["median"] > 0 and "waiting us" in profile.table()
    events = json.loads(trace.read_text())["traceEvents"]
    spans = [e for e in events if e["ph"] == "X"]
    assert len(spans) == len(profile["nodes"])
    lanes = {e["args"]["name"] for e in events if e["ph"] == "M"}
    assert lanes == set(profile["busy_ms_per_lane"])
    if name == "hetero_opencl_seed":
        assert any(lane.startswith("opencl:0") for lane in lanes)
        assert any(e["name"].startswith("__copy") and e["args"]["bytes"] == 20 for e in spans)
    sequential = hetrt.load(folder / "deploy.so").create(devices, sequential=True).profile(repeat=2, warmup=0)
    assert sequential["mode"] == "sequential"
