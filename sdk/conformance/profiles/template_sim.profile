# hetrt-conformance profile of the plugin template's simulated accelerator
# (examples/plugin-template): what it leaves out, on purpose, to stay small.
unsupported pinned-labelled-with-device: its pinned memory is plain host memory, copied as host memory only
unsupported failed-free-count: it keeps statistics of its own and does not count refused frees
