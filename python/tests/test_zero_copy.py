"""Memory crosses without copies where it can: inputs bound in place (the
kernels read numpy's buffer), outputs written into or viewed from numpy,
DLPack both ways, params shared between executors; and views stay valid after
the module that made them is gone."""

import gc
import json

import numpy as np
import pytest

import hetrt
from conftest import fixture_dir, run_python


def add3():
    """Output = a + b + c, each [1, 10] float32."""
    return hetrt.load(fixture_dir("add3") / "deploy.so").create(hetrt.cpu())


def aligned(values):
    array = hetrt.empty(np.shape(values), "float32")
    array[...] = values
    return array


def unaligned(values):
    base = np.zeros(np.size(values) + 16, np.float32)
    offset = next(i for i in range(1, 16) if (base[i:].ctypes.data % 64) != 0)
    array = base[offset:offset + np.size(values)].reshape(np.shape(values))
    array[...] = values
    return array


A, B, C = (np.arange(10, dtype=np.float32).reshape(1, 10) * k for k in (1.0, 10.0, 100.0))


def test_empty_is_64_byte_aligned():
    for shape in [(1,), (3, 5), (1, 3, 224, 224)]:
        assert hetrt.empty(shape, "float32").ctypes.data % 64 == 0


def test_kernels_read_the_bound_numpy_buffer():
    m = add3()
    a = aligned(A)
    assert m.set_input_zero_copy("a", a) is True
    assert m.get_input("a").data_ptr == a.ctypes.data  # the executor's input tensor is numpy's memory
    m.set_input(b=B, c=C)
    m.run()
    np.testing.assert_array_equal(m.get_output(0).numpy(), A + B + C)
    a += 1000  # in place, no set_input: the next run must see it
    m.run()
    np.testing.assert_array_equal(m.get_output(0).numpy(), A + 1000 + B + C)


def test_run_binds_aligned_inputs():
    m = add3()
    a, b, c = aligned(A), aligned(B), aligned(C)
    m.run(a=a, b=b, c=c)
    assert [m.get_input(n).data_ptr for n in "abc"] == [x.ctypes.data for x in (a, b, c)]
    c[0, 0] = -1
    m.run()
    assert m.get_output(0).numpy()[0, 0] == A[0, 0] + B[0, 0] - 1


def test_unaligned_input_is_copied_once():
    m = add3()
    a = unaligned(A)
    assert m.set_input_zero_copy("a", a) is False
    assert m.get_input("a").data_ptr != a.ctypes.data
    m.run(b=B, c=C)
    a += 1000  # a copy was taken: later changes do not reach the model
    m.run()
    np.testing.assert_array_equal(m.get_output(0).numpy(), A + B + C)


def test_an_input_whose_storage_a_kernel_writes_is_copied():
    """add3's first add written into a's storage (the planner may reuse an
    input's storage once it is read): binding numpy's buffer there would let
    the kernel overwrite the caller's array, so the input is copied."""
    graph = {
        "nodes": [{"op": "null", "name": n, "inputs": []} for n in "abc"] + [
            {"op": "tvm_op", "name": "add", "inputs": [[0, 0, 0], [1, 0, 0]],
             "attrs": {"func_name": "tvmgen_default_fused_add", "num_inputs": "2", "num_outputs": "1",
                       "flatten_data": "0"}}],
        "arg_nodes": [0, 1, 2], "heads": [[3, 0, 0]], "node_row_ptr": [0, 1, 2, 3, 4],
        "attrs": {"dltype": ["list_str", ["float32"] * 4], "shape": ["list_shape", [[1, 10]] * 4],
                  "storage_id": ["list_int", [0, 1, 2, 0]]}}
    m = hetrt.load(fixture_dir("add3") / "lib.so", graph=json.dumps(graph), devices=hetrt.cpu())
    a = aligned(A)
    assert m.set_input_zero_copy("a", a) is False
    assert m.set_input_zero_copy("b", aligned(B)) is True
    m.run()
    np.testing.assert_array_equal(m.get_output(0).numpy(), A + B)
    np.testing.assert_array_equal(a, A)


def test_non_contiguous_and_foreign_inputs():
    m = add3()
    strided = np.zeros((1, 20), np.float32)
    strided[:, ::2] = A
    assert m.set_input_zero_copy("a", strided[:, ::2]) is False
    big_endian = B.astype(">f4")
    m.set_input("b", big_endian)
    read_only = aligned(C)
    read_only.flags.writeable = False  # inputs are only read: bound all the same
    assert m.set_input_zero_copy("c", read_only) is True
    m.run()
    np.testing.assert_array_equal(m.get_output(0).numpy(), A + B + C)


def test_set_input_copies_the_caller_memory():
    m = add3()
    a = aligned(A)
    m.set_input("a", a)
    assert m.get_input("a").data_ptr != a.ctypes.data
    m.run(b=B, c=C)
    a += 1000
    m.run()
    np.testing.assert_array_equal(m.get_output(0).numpy(), A + B + C)


def test_output_written_into_numpy():
    m = add3()
    out = hetrt.empty((1, 10), "float32")
    m.set_output_zero_copy(0, out)
    assert m.get_output(0).data_ptr == out.ctypes.data
    m.run(a=A, b=B, c=C)
    np.testing.assert_array_equal(out, A + B + C)


def test_outputs_are_views():
    m = add3()
    m.run(a=A, b=B, c=C)
    t = m.get_output(0)
    view, asarray, dlpack = t.numpy(), np.asarray(t), np.from_dlpack(t)
    assert view.ctypes.data == asarray.ctypes.data == dlpack.ctypes.data == t.data_ptr
    assert t.__dlpack_device__() == (1, 0)
    m.run(a=A * 0, b=B * 0, c=C * 0)  # the next run overwrites the views
    assert not view.any() and not dlpack.any()


@pytest.mark.parametrize("via", ["numpy", "dlpack", "bound"])
def test_output_view_outlives_the_module(via):
    # In a process where glibc fills freed memory with a pattern at once (no
    # per-thread cache, M_PERTURB), a view of freed storage would read garbage.
    # "bound": the output is an array bound with set_output_zero_copy, dropped
    # by the caller too.
    code = f"""
        import gc, os, numpy as np, hetrt
        path = os.environ["HETRT_FIXTURES"] + "/tvm-0.18/add3/deploy.so"
        a = np.arange(10, dtype=np.float32).reshape(1, 10)
        m = hetrt.load(path).create()
        if "{via}" == "bound":
            out = hetrt.empty((1, 10), "float32")
            m.set_output_zero_copy(0, out)
            del out
        m.run(a=a, b=a, c=a)
        t = m.get_output(0)
        view = np.from_dlpack(t) if "{via}" == "dlpack" else t.numpy()
        del t, m
        gc.collect()
        others = [hetrt.load(path).create() for _ in range(4)]  # would reuse freed storage
        for o in others:
            o.run(a=-a, b=-a, c=-a)
        np.testing.assert_array_equal(view, 3 * a)
    """
    done = run_python(code, GLIBC_TUNABLES="glibc.malloc.tcache_count=0", MALLOC_PERTURB_="165")
    assert done.returncode == 0, done.stderr


def test_from_dlpack_borrows():
    a = aligned(A)
    t = hetrt.from_dlpack(a)
    assert t.data_ptr == a.ctypes.data and t.shape == (1, 10) and t.dtype == "float32"
    m = add3()
    assert m.set_input_zero_copy("a", t) is True
    assert m.get_input("a").data_ptr == a.ctypes.data
    m.set_input("b", B.__dlpack__())  # a raw DLPack capsule
    m.set_input("c", hetrt.from_dlpack(C.copy()))
    m.run()
    np.testing.assert_array_equal(m.get_output(0).numpy(), A + B + C)


def test_strided_dlpack_is_refused():
    with pytest.raises(hetrt.InvalidArgumentError, match="strided"):
        hetrt.from_dlpack(np.ones((4, 4), np.float32)[:, ::2])


def test_executors_of_one_factory_share_params():
    lib = hetrt.load(fixture_dir("mlp") / "deploy.so")
    m1, m2 = lib.create(), lib.create()
    assert m1.get_input("p0").data_ptr == m2.get_input("p0").data_ptr


def test_share_params_binds_the_other_executors_weights():
    folder = fixture_dir("mlp")
    lib = hetrt.load(folder / "lib.so", graph=folder / "graph.json", params=folder / "params.params")
    owner = lib.create()
    empty = hetrt.load(folder / "lib.so", graph=folder / "graph.json").create()
    empty.share_params(owner, folder / "params.params")
    names = list(hetrt.load_param_dict(folder / "params.params"))
    assert [empty.get_input(n).data_ptr for n in names] == [owner.get_input(n).data_ptr for n in names]
    inputs = hetrt.load_param_dict(folder / "inputs.params")
    owner.run(**inputs)
    want = owner.get_output(0).numpy().copy()
    del owner
    gc.collect()
    empty.run(**inputs)  # still reads the weights the deleted module owned
    np.testing.assert_array_equal(empty.get_output(0).numpy(), want)
