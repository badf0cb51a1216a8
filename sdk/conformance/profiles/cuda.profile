# hetrt-conformance profile of the CUDA plugin (plugins/cuda): every check runs
# under its defaults, on a GPU or on the fake driver (tests/cuda/fake_*.cc).
# Without a GPU the device checks skip with the reason.
