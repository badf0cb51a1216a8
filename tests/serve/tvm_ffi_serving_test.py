"""`hetrt serve` with a model library in TVM v0.23+'s form (tvm-ffi ABI, V2
image; made by make_ffi_model) in its repository, from outside: the metadata
comes from the bytecode's checks, REST inference answers x + bias, a wrong
shape gets 400 with the reason.

Usage: tvm_ffi_serving_test.py HETRT MAKE_FFI_MODEL
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from server_process import Server, fixture_repository, rest_json  # noqa: E402


def main():
    hetrt, make_model = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as made:
        os.makedirs(os.path.join(made, "ffi_model"))
        subprocess.check_call([make_model, os.path.join(made, "ffi_model", "deploy.so")])
        repository = fixture_repository(made, {"ffi": ("ffi_model", ["deploy.so"], None)})
        with Server(hetrt, repository) as server:
            status, meta = rest_json(server.http, "GET", "/v2/models/ffi")
            assert status == 200, meta
            assert meta["platform"] == "hetrt_relax_vm", meta
            assert meta["inputs"] == [{"name": "x", "datatype": "FP32", "shape": [2, 4]}], meta

            x = np.arange(8, dtype=np.float32).reshape(2, 4)
            body = {"inputs": [{"name": "x", "shape": [2, 4], "datatype": "FP32", "data": x.flatten().tolist()}]}
            status, answer = rest_json(server.http, "POST", "/v2/models/ffi/infer", body)
            assert status == 200, answer
            got = np.array(answer["outputs"][0]["data"], np.float32).reshape(answer["outputs"][0]["shape"])
            np.testing.assert_array_equal(got, x + np.array([0.5, 1, 1.5, 2], np.float32))

            body["inputs"][0]["shape"] = [4, 2]
            status, answer = rest_json(server.http, "POST", "/v2/models/ffi/infer", body)
            assert status == 400 and "shape [4,2]" in answer["error"], (status, answer)
    print("tvm-ffi model served: metadata, inference, refusal")
    return 0


if __name__ == "__main__":
    sys.exit(main())
