"""hetrt: run TVM-compiled models on mixed hardware, from Python.

    import hetrt
    m = hetrt.load("deploy.so").create(hetrt.cpu())
    m.run(data=x)
    y = m.get_output(0).numpy()

The shape is TVM's (``load_module`` + ``graph_executor.GraphModule``): load a
library, create an executor for a list of devices, set inputs, run, read
outputs. Host memory crosses without copies where it can: see ``set_input``,
``set_input_zero_copy``, ``get_output`` and ``Tensor``.
"""

import os
from typing import NamedTuple

from . import _hetrt
from ._hetrt import (  # noqa: F401  (re-exported)
    DataLossError,
    Error,
    FailedPreconditionError,
    InternalError,
    InvalidArgumentError,
    Kernel,
    KernelLibrary,
    NotFoundError,
    OutOfRangeError,
    ResourceExhaustedError,
    Tensor,
    UnavailableError,
    UnimplementedError,
    empty,
    from_dlpack,
    set_num_threads,
    tensor,
)
from ._profile import BenchmarkResult, Profile

__version__ = "0.1.0"


# ----------------------------------------------------------------- devices


class Device(NamedTuple):
    """A device as DLPack names it: (device_type, device_id)."""

    device_type: int
    device_id: int = 0

    @property
    def type_name(self):
        return _hetrt.device_type_name(self.device_type)

    @property
    def exist(self):
        """Whether a plugin serves this device here (TVM's ``Device.exist``)."""
        return _hetrt.device_status(self.device_type, self.device_id)[0]

    @property
    def unavailable_reason(self):
        """Why the device cannot be used (the core's message), or None."""
        ok, reason = _hetrt.device_status(self.device_type, self.device_id)
        return None if ok else reason

    def __str__(self):
        return f"{self.type_name}:{self.device_id}"

    def __repr__(self):
        return f"hetrt.device({self.type_name!r}, {self.device_id})"


def device(kind, index=None):
    """``device("cpu")``, ``device("opencl", 1)``, ``device("opencl:1")``;
    kinds: cpu, opencl, vulkan, cuda, micro (and the other DLPack names)."""
    if isinstance(kind, Device):
        return kind if index is None else Device(kind.device_type, index)
    if isinstance(kind, int):
        return Device(kind, index or 0)
    if isinstance(kind, tuple):
        return Device(*kind)
    device_type, device_id = _hetrt.parse_device(kind)
    return Device(device_type, device_id if index is None else index)


def cpu(index=0):
    return device("cpu", index)


def opencl(index=0):
    return device("opencl", index)


def vulkan(index=0):
    return device("vulkan", index)


def cuda(index=0):
    return device("cuda", index)


def micro(index=0):
    """The host-driven micro device: an MLF model in a separate device program."""
    return device("micro", index)


def _devices(devices):
    if devices is None:
        return [cpu()]
    if isinstance(devices, (str, int, Device)):
        devices = [devices]
    return [device(d) for d in devices]


def plugins():
    """The plugins the core loaded: name, version, ABI, path, type_keys and,
    per device type, the devices found or the reason there are none."""
    return _hetrt.plugins()


def plugin_problems():
    """(path, reason) for every plugin file or folder that was not used."""
    return _hetrt.plugin_problems()


# ----------------------------------------------------------------- loading


def load(path, graph=None, params=None, *, devices=None, allow_missing_plugins=False):
    """Loads a model.

    - ``load("deploy.so")``: an exported library (graph or AOT factory root,
      or a Relax executable from ``relax.build(...).export_library``);
    - ``load("lib.so", graph="graph.json", params="params.params")``: TVM's
      three files (``graph`` may also be the JSON text, ``params`` its bytes);
    - ``load("model.tar")``: a Model Library Format package (C code, compiled
      here with ``cc`` when an executor is created).

    With ``devices``, what comes back runs: a ``VirtualMachine`` for a Relax
    executable, an executor (``GraphModule``) for the others; without, the
    module, whose ``create(devices)`` does the same.

    ``allow_missing_plugins`` keeps modules no plugin loads in the tree (for
    inspection; creating an executor then fails with the reason).
    """
    path = os.fspath(path)
    if path.endswith(".tar"):
        package = MlfModule(_hetrt.MlfPackage.read(path), path)
        return package if devices is None else package.create(devices)
    lib = _hetrt.load_module(path, allow_missing_plugins)
    if graph is None:
        if params is not None:
            raise ValueError("params= goes with graph= (a deploy.so carries its own params)")
        return Module(lib) if devices is None else Module(lib).create(devices)
    if devices is not None:
        return load(path, graph, params, allow_missing_plugins=allow_missing_plugins).create(devices)
    graph = os.fspath(graph)
    if graph.lstrip().startswith("{"):
        text, source = graph, "graph JSON"
    else:
        text, source = _hetrt.read_text(graph), graph
    if params is not None and not isinstance(params, (bytes, bytearray)):
        params = os.fspath(params)
    elif isinstance(params, bytearray):
        params = bytes(params)
    return Module(_hetrt.graph_factory(text, source, lib, params))


def load_kernels(path):
    """Loads a library of tvm-ffi kernels: a shared object exporting
    ``__tvm_ffi_<name>`` functions, as Triton, TileLang or TVM (a plain TIR
    module) compile them. ``lib["name"](a, b, out, 0.5)`` calls a kernel with
    numpy arrays, DLPack tensors, ``hetrt.Tensor`` (any device) and Python
    scalars and strings; arrays are passed as their own memory, so a kernel
    writes its outputs into them. A kernel's raised error comes back as the
    Python exception its kind names (``ValueError``, ``TypeError``, ...).
    ``lib.names``, ``lib.metadata(name)`` and ``lib.doc(name)`` describe it.
    """
    return _hetrt.load_kernels(os.fspath(path))


# A Relax executable's root in each TVM era: v0.14-v0.19, then v0.20 and the
# tvm-ffi libraries of v0.22+ (docs/tvm-eras.md).
_RELAX_ROOTS = ("relax.Executable", "relax.VMExecutable")


class Module:
    """A module of the tree (TVM's ``runtime.Module``): ``type_key``,
    ``imports``, ``function_names``. The root of a model creates executors."""

    def __init__(self, module):
        self._module = module

    type_key = property(lambda self: self._module.type_key)
    function_names = property(lambda self: self._module.function_names)
    module_name = property(lambda self: self._module.module_name)
    graph_json = property(lambda self: self._module.graph_json)
    param_names = property(lambda self: self._module.param_names)
    unloaded_reason = property(lambda self: self._module.unloaded_reason)

    @property
    def imports(self):
        return [Module(m) for m in self._module.imports]

    def describe(self):
        return self._module.describe()

    def has_function(self, name):
        return self._module.has_function(name)

    def tree(self, indent=0):
        """The module tree as text, one module per line."""
        line = "  " * indent + self.type_key
        detail = self.unloaded_reason or self.describe()
        if detail:
            line += f": {detail}"
        return "\n".join([line] + [m.tree(indent + 1) for m in self.imports])

    def create(self, devices=None, *, sequential=False, staged_copies=False):
        """An executor for ``devices`` (default: the CPU); see ``GraphModule``, and
        ``VirtualMachine`` for a Relax executable."""
        if self.type_key in _RELAX_ROOTS:
            if sequential or staged_copies:
                raise TypeError("sequential/staged_copies are graph executor options; a Relax VM has neither")
            return VirtualMachine(self, devices)
        return GraphModule(self, devices, sequential=sequential, staged_copies=staged_copies)

    def __getitem__(self, name):
        # TVM's lib["default"](dev, ...)
        if name != self.module_name:
            raise KeyError(f"{self.type_key} module has no executor factory named {name!r}")
        return lambda *devices: self.create(list(devices) or None)

    def __repr__(self):
        return f"<hetrt.Module {self.type_key}>"


class MlfModule:
    """A Model Library Format package. ``create()`` compiles its C code with
    hetrt's C runtime and runs it in this process; ``create(hetrt.micro())``
    runs it in a separate device program driven over a byte stream."""

    type_key = "mlf"
    imports = ()

    def __init__(self, package, path):
        self._package = package
        self.path = path

    @property
    def metadata(self):
        return self._package.metadata

    @property
    def files(self):
        return self._package.files

    @property
    def function_names(self):
        return [f["name"] for f in self.metadata["memory"]]

    def create(self, devices=None):
        """An executor; ``devices`` containing ``hetrt.micro()`` selects the device program."""
        return GraphModule(self, devices)

    def __repr__(self):
        return f"<hetrt.MlfModule {self.metadata['model_name']} ({self.path})>"


# ---------------------------------------------------------------- Relax VM


class VirtualMachine:
    """A Relax executable's virtual machine (TVM's ``relax.VirtualMachine``).

    ``VirtualMachine(lib, devices, memory_cfg=None)``: ``lib`` is what
    ``hetrt.load`` gave for the executable; ``devices`` are the devices it was
    built for, in its vdevice order (a CPU is appended when the last is not
    one, as TVM does); ``memory_cfg="naive"`` allocates per call instead of
    pooling.

    ``vm["main"](x, w, ...)`` calls a function: numpy arrays, DLPack objects,
    ``hetrt.Tensor`` and Python scalars go in (each tensor moved to the device
    the function reads it on), ``hetrt.Tensor`` (host memory; ``.numpy()``,
    ``np.asarray``, ``np.from_dlpack`` share it) and tuples come out.
    ``set_input`` / ``invoke_stateful`` / ``get_outputs`` are TVM's stateful
    calls. Errors (a wrong shape, a symbolic dimension bound twice) are
    ``hetrt.Error`` with the core's message.
    """

    def __init__(self, lib, devices=None, memory_cfg=None):
        if memory_cfg not in (None, "pooled", "naive"):
            raise ValueError(f"memory_cfg must be 'pooled' or 'naive', got {memory_cfg!r}")
        root = lib._module if isinstance(lib, Module) else lib
        targets = [tuple(d) for d in _devices(devices)]
        self._vm = _hetrt.RelaxVM(root, targets, memory_cfg != "naive")
        self._inputs = {}
        self._outputs = {}

    @property
    def function_names(self):
        return self._vm.function_names()

    @property
    def devices(self):
        return [Device(*d) for d in self._vm.devices()]

    def get_function_param_names(self, name):
        return self._vm.param_names(name)

    def get_function_arity(self, name):
        return len(self._vm.param_names(name))

    def _arguments(self, name, args, kwargs):
        names = self._vm.param_names(name)
        if len(args) > len(names):
            raise TypeError(f"{name}() takes {len(names)} argument(s) ({', '.join(names)}), got {len(args)}")
        values = list(args) + [None] * (len(names) - len(args))
        for key, value in kwargs.items():
            if key not in names:
                raise TypeError(f"{name}() has no parameter {key!r} (parameters: {', '.join(names)})")
            values[names.index(key)] = value
        missing = [n for n, v in zip(names, values) if v is None]
        if missing:
            raise TypeError(f"{name}() is missing {', '.join(missing)}")
        return values

    def invoke(self, name, *args, **kwargs):
        return self._vm.invoke(name, self._arguments(name, args, kwargs))

    def __getitem__(self, name):
        if name not in self._vm.function_names():
            raise KeyError(f"the executable has no function {name!r} (its functions: "
                           f"{', '.join(self._vm.function_names())})")
        return lambda *args, **kwargs: self.invoke(name, *args, **kwargs)

    def set_input(self, name, *args, **kwargs):
        """Inputs for ``invoke_stateful(name)``, by position or parameter name."""
        self._inputs[name] = self._arguments(name, args, kwargs)

    def invoke_stateful(self, name):
        if name not in self._inputs:
            raise ValueError(f"invoke_stateful({name!r}) needs set_input({name!r}, ...) first")
        self._outputs[name] = self._vm.invoke(name, self._inputs[name])

    def get_outputs(self, name):
        """What the last ``invoke_stateful(name)`` returned (tuples as tuples)."""
        if name not in self._outputs:
            raise ValueError(f"get_outputs({name!r}) needs invoke_stateful({name!r}) first")
        return self._outputs[name]

    def __repr__(self):
        return f"<hetrt.VirtualMachine {', '.join(self.function_names)} on {', '.join(map(str, self.devices))}>"


# ---------------------------------------------------------------- executors


class IOInfo(NamedTuple):
    name: str
    shape: tuple  # None where the executor does not say
    dtype: str


class GraphModule:
    """An executor (TVM's ``graph_executor.GraphModule``; also runs AOT and
    MLF models).

    ``GraphModule(lib, devices)``: ``lib`` is what ``hetrt.load`` returned,
    ``devices`` a device or a list of them (a graph entry whose device_index
    is a DLPack type goes to the first listed device of that type).
    ``sequential`` runs one node at a time with blocking copies (TVM's order);
    ``staged_copies`` sends every copy through the plugins.

    Inputs: ``set_input`` copies (one copy; none when it could bind a private
    buffer); ``set_input_zero_copy`` and ``run(**inputs)`` bind the caller's
    memory when it is C-contiguous, 64-byte aligned (``hetrt.empty`` gives
    such arrays), of the input's dtype and on the input's device, and no
    kernel of the graph writes into the input's storage (the planner may
    reuse it once the input is read), and copy once otherwise. A bound array
    is held by the executor and read by every later run, so changing it
    changes the next run's input.

    Outputs: ``get_output(i)`` is a ``hetrt.Tensor`` viewing the executor's
    storage (no copy for host outputs; ``.numpy()``, ``np.asarray`` and
    ``np.from_dlpack`` share it). The next run overwrites it; the view keeps
    the storage alive after the module is gone.
    """

    def __init__(self, lib, devices=None, *, sequential=False, staged_copies=False):
        targets = _devices(devices)
        if isinstance(lib, MlfModule):
            if sequential or staged_copies:
                raise TypeError("MLF models run on the C runtime, which has no sequential/staged_copies options")
            host_driven = any(d.device_type == micro().device_type for d in targets)
            executor = _hetrt.Executor.from_mlf(lib.path, host_driven)
        else:
            root = lib._module if isinstance(lib, Module) else lib
            executor = _hetrt.Executor.from_module(root, targets, sequential, staged_copies)
        self._executor = executor
        self._sequential = sequential
        self._input_names = [executor.input_name(i) for i in range(executor.num_inputs())]
        self._input_indices = {name: i for i, name in enumerate(self._input_names)}
        self._output_names = [executor.output_name(i) for i in range(executor.num_outputs())]

    @property
    def kind(self):
        """'graph', 'aot', 'mlf' (in-process C runtime) or 'micro' (device program)."""
        return self._executor.kind

    # -- names, shapes, dtypes

    def get_num_inputs(self):
        """Graph inputs, params included (as TVM counts them)."""
        return len(self._input_names)

    def get_num_outputs(self):
        return len(self._output_names)

    @property
    def input_names(self):
        return list(self._input_names)

    @property
    def output_names(self):
        return list(self._output_names)

    def get_input_index(self, name):
        index = self._input_indices.get(name)
        if index is None:
            raise NotFoundError(f"the model has no input named '{name}'")
        return index

    def _index(self, key):
        return key if isinstance(key, int) else self.get_input_index(key)

    def _info(self, names, info):
        out = []
        for i, name in enumerate(names):
            shape_dtype = info(i)
            out.append(IOInfo(name, *(shape_dtype or (None, None))))
        return out

    def get_inputs(self):
        """The inputs a caller provides (those not bound to a param), as ORT lists them."""
        unbound = set(self._executor.unbound_inputs())
        every = self._info(self._input_names, self._executor.input_info)
        return [info for i, info in enumerate(every) if i in unbound]

    def get_outputs(self):
        return self._info(self._output_names, self._executor.output_info)

    def get_input_info(self):
        """TVM's (shape_dict, dtype_dict) of the inputs a caller provides."""
        inputs = self.get_inputs()
        return {i.name: i.shape for i in inputs}, {i.name: i.dtype for i in inputs}

    # -- inputs

    def set_input(self, key=None, value=None, **params):
        """Copies ``value`` into input ``key`` (a name or an index); keyword
        arguments set several. Wrong shapes or dtypes raise the core's error."""
        inputs = [(self._index(key), value)] if key is not None else []
        inputs += [(self.get_input_index(name), v) for name, v in params.items()]
        self._executor.set_inputs(inputs, False)

    def set_input_zero_copy(self, key, value):
        """Binds ``value``'s memory as input ``key`` without a copy where the
        executor allows (see the class notes); copies once otherwise. Returns
        True when the caller's memory is now the input."""
        return self._executor.set_inputs([(self._index(key), value)], True)[0]

    def set_output_zero_copy(self, index, array):
        """Makes output ``index`` be written straight into ``array`` (C-contiguous,
        64-byte aligned, the output's dtype and size)."""
        self._executor.set_output_zero_copy(index, array)

    def get_input(self, key):
        """The input's storage as the kernels see it (a view; graph executors)."""
        return self._executor.input_tensor(self._index(key))

    def load_params(self, params):
        """TVM's load_params: a param dict as bytes, a file path, or a
        {name: array} dict. Names that are not graph inputs are ignored."""
        if isinstance(params, dict):
            self.set_input(**{name: value for name, value in params.items() if name in self._input_indices})
            return
        if not isinstance(params, (bytes, bytearray)):
            with open(params, "rb") as f:
                params = f.read()
        self._executor.load_params(bytes(params))

    def share_params(self, other, params=None):
        """Uses ``other``'s params in place, without a copy (TVM's
        share_params): every param input of ``other``, or those named in
        ``params`` (names, a {name: array} dict, param-dict bytes or path).
        ``other``'s storage stays alive while this module uses it."""
        if params is None:
            unbound = set(other._executor.unbound_inputs())
            names = [n for i, n in enumerate(other._input_names) if i not in unbound]
        elif isinstance(params, (bytes, bytearray, str, os.PathLike)):
            names = list(load_param_dict(params))
        else:
            names = list(params)
        for name in names:
            if name not in self._input_indices:
                continue
            shared = other._executor.input_tensor(other.get_input_index(name))
            self._executor.set_inputs([(self.get_input_index(name), shared)], True)

    # -- running

    def run(self, **inputs):
        """Binds ``inputs`` (as ``set_input_zero_copy``) and runs. The GIL is
        released while the model runs."""
        if inputs:
            self._executor.set_inputs([(self.get_input_index(n), v) for n, v in inputs.items()], True, True)
        else:
            self._executor.run()

    def synchronize(self):
        """Waits for device work of the last run (``get_output`` waits by itself)."""
        self._executor.synchronize()

    def get_output(self, index, out=None):
        """Output ``index`` as a ``hetrt.Tensor`` (see the class notes), or
        copied into ``out`` when given (TVM's get_output(index, out))."""
        tensor = self._executor.get_output(index)
        if out is None:
            return tensor
        import numpy

        numpy.copyto(out, tensor.numpy())
        return out

    def __call__(self, **inputs):
        """Runs and returns every output as a numpy array (copies, safe to keep)."""
        self.run(**inputs)
        return [self.get_output(i).numpy().copy() for i in range(self.get_num_outputs())]

    def benchmark(self, repeat=50, number=1, warmup=3):
        """Times ``repeat`` rounds of ``number`` runs (each round ends with a
        synchronize) after ``warmup`` runs; seconds per run, like TVM's."""
        return BenchmarkResult(self._executor.time_runs(repeat, number, warmup))

    def profile(self, repeat=50, warmup=3, trace=None):
        """Per-node times like ``hetrt bench``: every node at its true place in
        time, per lane (host, each device stream), mean/median/p99 and the time
        its lane waited on another lane. ``trace`` writes a Chrome trace of the
        first timed run. Returns a ``Profile`` (a dict of plain data)."""
        from . import _profile

        return _profile.profile(self._executor, repeat, warmup, trace, self._sequential)

    @property
    def storage_bytes(self):
        """Bytes of executor-owned storage per device (params used in place excluded)."""
        return self._executor.graph_info()["storage_bytes"]

    def __repr__(self):
        return f"<hetrt.GraphModule {self.kind}: inputs {self._input_names}, outputs {self._output_names}>"


def load_param_dict(params):
    """A TVM param dict (``.params`` bytes or file) as {name: numpy array}."""
    if not isinstance(params, (bytes, bytearray)):
        with open(params, "rb") as f:
            params = f.read()
    return {name: t.numpy() for name, t in _hetrt.load_param_dict(bytes(params)).items()}


def save_param_dict(params):
    """{name: array} as TVM param-dict bytes (what ``load_params`` takes)."""
    return _hetrt.save_param_dict(dict(params))
