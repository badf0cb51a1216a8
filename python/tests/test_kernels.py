"""tvm-ffi kernel libraries from Python (hetrt.load_kernels): a foreign
library built as other compilers ship one (tests/kernels/ffi_kernels.c),
called with numpy arrays, DLPack tensors and Python scalars; its raised
errors come back as the Python exceptions their kinds name."""

import os
import pathlib

import numpy as np
import pytest

import hetrt


@pytest.fixture(scope="module")
def kernels():
    build = os.environ.get("HETRT_BUILD_DIR")
    if not build:
        pytest.fail("HETRT_BUILD_DIR not set (ctest sets it)")
    return hetrt.load_kernels(pathlib.Path(build) / "test-kernels" / "libffi_kernels.so")


def test_lists_kernels_with_metadata(kernels):
    assert "add_one" in kernels and "add_two" not in kernels
    assert kernels.names == sorted(kernels.names) and len(kernels) == 13
    assert kernels.metadata("add_one") == '{"type_schema": "(Tensor, Tensor) -> None"}'
    assert kernels.doc("add_one") == "y = x + 1"
    assert kernels.metadata("scale") == ""


def test_a_list_or_tuple_goes_as_an_array(kernels):
    x = np.ones(3, np.float32)
    # The kernel reads an Array of three items and checks their kinds: a
    # Python tuple is an Array there, so its second item is not a Shape.
    with pytest.raises(TypeError, match=r"items \[Tensor, Shape, Int\] expected"):
        kernels["describe"]([x, (3,), 7])
    with pytest.raises(TypeError, match=r"describe\(items: Array\)"):
        kernels["describe"](x)
    cycle = []
    cycle.append(cycle)
    with pytest.raises(ValueError, match="nested deeper than 64"):
        kernels["describe"](cycle)


def test_kernels_become_global_functions_once_per_name(kernels):
    prefix = f"pytest{os.getpid()}."
    kernels.register_global_functions(prefix)
    with pytest.raises(hetrt.FailedPreconditionError, match="the name is taken"):
        kernels.register_global_functions(prefix)


def test_writes_into_the_callers_arrays(kernels):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.zeros((2, 3), np.float32)
    assert kernels["add_one"](x, y) is None
    np.testing.assert_array_equal(y, x + 1)
    kernels["scale"](x, y, 0.5)
    np.testing.assert_array_equal(y, x * 0.5)
    kernels["scale"](x, y, 2)  # an int where the kernel also takes one
    np.testing.assert_array_equal(y, x * 2)


def test_takes_dlpack_and_hetrt_tensors(kernels):
    y = hetrt.tensor(np.zeros(4, np.float32))
    kernels["add_one"](hetrt.tensor(np.full(4, 2, np.float32)), y)
    np.testing.assert_array_equal(y.numpy(), [3, 3, 3, 3])
    z = np.zeros(4, np.float32)
    kernels["add_one"](hetrt.from_dlpack(y.numpy()), z)
    np.testing.assert_array_equal(z, [4, 4, 4, 4])


def test_returns_python_values_and_tensors(kernels):
    assert kernels["sum"](np.array([0.25, 0.5, 2], np.float32)) == 2.75
    assert kernels["negate"](False) is True
    assert kernels["greet"]("py") == "hello, py"
    assert kernels["greet"]("a longer name") == "hello, a longer name"
    made = kernels["iota"](4)
    assert isinstance(made, hetrt.Tensor)
    np.testing.assert_array_equal(made.numpy(), [0, 1, 2, 3])


def test_raised_errors_are_the_python_exceptions_they_name(kernels):
    with pytest.raises(ValueError, match=r"kernel 'add_one' in .*raised ValueError: argument x must be float32") as e:
        kernels["add_one"](np.zeros(2, np.int32), np.zeros(2, np.float32))
    assert e.value.kind == "ValueError" and e.value.kernel_message == "argument x must be float32"
    with pytest.raises(TypeError, match="add_one takes 2 arguments"):
        kernels["add_one"](np.zeros(2, np.float32))
    with pytest.raises(RuntimeError, match="failed without raising an error"):
        kernels["fail_silently"]()
    with pytest.raises(hetrt.NotFoundError, match="no kernel 'add_two'"):
        kernels["add_two"]


def test_refuses_arrays_it_would_have_to_copy(kernels):
    y = np.zeros((3, 2), np.float32).T  # not C-contiguous: a copy would swallow the kernel's writes
    with pytest.raises(ValueError, match="not C-contiguous"):
        kernels["add_one"](np.zeros((2, 3), np.float32), y)


def test_a_model_library_is_not_a_kernel_library():
    fixtures = pathlib.Path(os.environ.get("HETRT_FIXTURES", "")) / "tvm-0.18" / "add3" / "deploy.so"
    if not fixtures.is_file():
        pytest.fail(f"fixture {fixtures} missing")
    with pytest.raises(ValueError, match="is a TVM model library"):
        hetrt.load_kernels(fixtures)
