"""The GIL is released while a model runs: two Python threads drive two
executors at the same time, and other Python code runs meanwhile."""

import threading
import time

import numpy as np

import hetrt
from conftest import fixture_dir, tolerances, meta


def resnet18():
    folder = fixture_dir("resnet18")
    return (hetrt.load(folder / "deploy.so"), hetrt.load_param_dict(folder / "inputs.params"),
            hetrt.load_param_dict(folder / "outputs.params")["output_0"], tolerances(meta("resnet18")))


def test_two_threads_two_executors():
    lib, inputs, expected, (rtol, atol) = resnet18()
    modules = [lib.create(), lib.create()]
    windows = [[], []]
    outputs, errors = [None, None], []
    start = threading.Barrier(2)  # both threads begin together, even on a loaded machine

    def work(k):
        try:
            m = modules[k]
            m.set_input(**inputs)
            start.wait(timeout=60)
            for _ in range(3):
                m.run()
                # Start and end as the core saw them (CLOCK_MONOTONIC, taken without the GIL).
                profile = m._executor.run_profiled()
                windows[k].append((profile["run_start_ns"], profile["run_end_ns"]))
            outputs[k] = m.get_output(0).numpy().copy()
        except Exception as e:  # re-raised by the assertion below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for out in outputs:
        np.testing.assert_allclose(out, expected, rtol=rtol, atol=atol)
    # The two executors ran at the same time: neither waited for the other's GIL.
    assert any(a0 < b1 and b0 < a1 for a0, a1 in windows[0] for b0, b1 in windows[1]), windows


def test_python_runs_while_a_model_runs():
    lib, inputs, _, _ = resnet18()
    m = lib.create()
    m.set_input(**inputs)
    windows, ticks = [], []
    done = threading.Event()

    def work():
        for _ in range(3):
            profile = m._executor.run_profiled()  # the same GIL-free path as run()
            windows.append((profile["run_start_ns"], profile["run_end_ns"]))
        done.set()

    worker = threading.Thread(target=work)
    worker.start()
    while not done.is_set():
        ticks.append(time.monotonic_ns())  # CLOCK_MONOTONIC, the core's host clock
    worker.join()
    # Had the run held the GIL, no tick of this thread could fall inside one.
    inside = sum(1 for t in ticks for start, end in windows if start < t < end)
    assert inside > 0, f"no tick inside {len(windows)} runs"
