"""`hetrt serve` with Relax executables in its repository, from outside.

Clients: the standard library's http.client (REST JSON) and Python's grpcio with
messages protoc makes from the project's .proto. Checked: the metadata shows -1
for symbolic dimensions; outputs over REST and gRPC equal what `hetrt run
--save-outputs` writes for the same inputs; weights passed as parameters come
from the version folder's params file; a symbolic-batch model with
dynamic_batching answers 16 concurrent one-row requests with exactly their rows,
in fewer runs than requests; bad requests get 400 with the reason while the
server keeps serving.

Usage: relax_serving_test.py HETRT  (HETRT_FIXTURES: the fixtures' folder)
"""
import concurrent.futures
import http.client
import os
import re
import subprocess
import sys
import tempfile
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from server_process import Server, fixture_repository, missing_fixtures, read_param_dict, rest_json  # noqa: E402

HETRT = None
RELAX = None
SERVER = None


def request(method, path, body=None):
    return rest_json(SERVER.http, method, path, body)


def infer(model, inputs):
    """inputs: {name: float32 array}; returns (status, {output name: array} or the error)."""
    body = {"inputs": [{"name": n, "shape": list(a.shape), "datatype": "FP32", "data": a.flatten().tolist()}
                       for n, a in inputs.items()]}
    status, answer = request("POST", f"/v2/models/{model}/infer", body)
    if status != 200:
        return status, answer
    return status, {o["name"]: np.array(o["data"], dtype=np.float32).reshape(o["shape"]) for o in answer["outputs"]}


def cli_outputs(model_dir, input_files, devices=("cpu",)):
    """output_0.. as `hetrt run --save-outputs` writes them for the same inputs."""
    with tempfile.TemporaryDirectory() as tmp:
        saved = os.path.join(tmp, "out.params")
        args = [HETRT, "run", os.path.join(model_dir, "deploy.so"), "--save-outputs", saved]
        for device in devices:
            args += ["--device", device]
        for f in input_files:
            args += ["--inputs", f]
        subprocess.check_call(args, stdout=subprocess.DEVNULL)
        return read_param_dict(saved)


class RelaxServing(unittest.TestCase):
    def test_metadata_shows_symbolic_dimensions(self):
        status, meta = request("GET", "/v2/models/dyn_batch")
        self.assertEqual(status, 200, meta)
        self.assertEqual(meta["platform"], "hetrt_relax_vm")
        self.assertEqual(meta["inputs"], [{"name": "data", "datatype": "FP32", "shape": [-1, 784]}])
        self.assertEqual(meta["outputs"], [{"name": "output_0", "datatype": "FP32", "shape": [-1, 10]}])
        status, meta = request("GET", "/v2/models/mlp_params")
        self.assertEqual([i["name"] for i in meta["inputs"]], ["data"], "weights come from the version's params")

    def test_rest_outputs_equal_the_cli(self):
        for model, fixture, files, devices in [
                ("mlp", "relax_mlp", ["inputs.params"], ["cpu"]),
                ("mlp_params", "relax_mlp_params", ["inputs.params", "params.params"], ["cpu"]),
                ("hetero", "relax_hetero_opencl", ["inputs.params"], ["opencl", "cpu"])]:
            with self.subTest(model=model):
                d = os.path.join(RELAX, fixture)
                inputs = {k: v for k, v in read_param_dict(os.path.join(d, "inputs.params")).items()}
                status, outputs = infer(model, inputs)
                self.assertEqual(status, 200, outputs)
                want = cli_outputs(d, [os.path.join(d, f) for f in files], devices)["output_0"]
                np.testing.assert_array_equal(outputs["output_0"], want)

    def test_grpc_outputs_equal_the_cli(self):
        import grpc
        from grpc_python_test import generate_messages
        with tempfile.TemporaryDirectory() as tmp:
            pb, _ = generate_messages(tmp)
            d = os.path.join(RELAX, "relax_dyn_batch")
            x = read_param_dict(os.path.join(d, "inputs_n5.params"))["data"]
            request_pb = pb.ModelInferRequest(model_name="dyn_batch")
            tensor = request_pb.inputs.add(name="data", datatype="FP32", shape=list(x.shape))
            del tensor
            request_pb.raw_input_contents.append(np.ascontiguousarray(x, dtype="<f4").tobytes())
            with grpc.insecure_channel(SERVER.grpc) as channel:
                call = channel.unary_unary("/inference.GRPCInferenceService/ModelInfer",
                                           request_serializer=lambda m: m.SerializeToString(),
                                           response_deserializer=pb.ModelInferResponse.FromString)
                response = call(request_pb, timeout=30)
            got = np.frombuffer(response.raw_output_contents[0], dtype="<f4").reshape(response.outputs[0].shape)
            want = cli_outputs(d, [os.path.join(d, "inputs_n5.params")])["output_0"]
            np.testing.assert_array_equal(got, want)

    def test_dynamic_batching_gives_each_caller_exactly_its_rows(self):
        d = os.path.join(RELAX, "relax_dyn_batch")
        x = read_param_dict(os.path.join(d, "inputs_n5.params"))["data"]
        want = read_param_dict(os.path.join(d, "outputs_n5.params"))["output_0"]
        before = executions("dyn_batch")
        rows = [i % 5 for i in range(16)]
        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            answers = list(pool.map(lambda r: infer("dyn_batch", {"data": x[r:r + 1]}), rows))
        for r, (status, outputs) in zip(rows, answers):
            self.assertEqual(status, 200, outputs)
            self.assertEqual(outputs["output_0"].shape, (1, 10))
            np.testing.assert_allclose(outputs["output_0"][0], want[r], rtol=1e-4, atol=1e-5)
        runs = executions("dyn_batch") - before
        self.assertLess(runs, 16, "16 concurrent requests should share runs")
        # A request of 3 rows and one of 5 (the model's own cases) without padding.
        for n in (3, 5):
            status, outputs = infer("dyn_batch", {"data": x[:n]})
            self.assertEqual(status, 200, outputs)
            np.testing.assert_allclose(outputs["output_0"], want[:n], rtol=1e-4, atol=1e-5)

    def test_bad_requests_get_400_and_the_server_keeps_serving(self):
        good = read_param_dict(os.path.join(RELAX, "relax_mlp", "inputs.params"))["data"]
        for inputs, reason in [({"data": np.zeros((1, 783), np.float32)}, "shape"),
                               ({"weights": good}, "no input named 'weights'"),
                               ({}, "missing")]:
            status, answer = infer("mlp", inputs)
            self.assertEqual(status, 400, answer)
            self.assertIn(reason, answer["error"])
        status, answer = infer("dyn_batch", {"data": np.zeros((9, 784), np.float32)})
        self.assertEqual(status, 400, answer)  # more rows than max_batch_size
        status, outputs = infer("mlp", {"data": good})
        self.assertEqual(status, 200, outputs)


def executions(model):
    conn = http.client.HTTPConnection(*SERVER.metrics.rsplit(":", 1), timeout=30)
    conn.request("GET", "/metrics")
    text = conn.getresponse().read().decode()
    conn.close()
    total = 0
    for line in text.splitlines():
        m = re.match(r'hetrt_inference_executions_total\{model="%s".*\} (\S+)' % model, line)
        if m:
            total += float(m.group(1))
    return total


def main():
    global HETRT, RELAX, SERVER
    HETRT = sys.argv[1]
    fixtures = os.environ.get("HETRT_FIXTURES", os.path.join(HERE, "..", "..", "..", "shared", "fixtures"))
    RELAX = os.path.join(fixtures, "tvm-0.18-relax")
    if not os.path.isdir(os.path.join(RELAX, "relax_dyn_batch")):
        return missing_fixtures(RELAX)
    repository = fixture_repository(RELAX, {
        "mlp": ("relax_mlp", ["deploy.so"], None),
        "mlp_params": ("relax_mlp_params", ["deploy.so", "params.params"], None),
        "hetero": ("relax_hetero_opencl", ["deploy.so"], {"instance_group": [{"devices": ["opencl", "cpu"]}]}),
        "dyn_batch": ("relax_dyn_batch", ["deploy.so"],
                      {"max_batch_size": 8, "dynamic_batching": {"max_queue_delay_microseconds": 20000}}),
    })
    with Server(HETRT, repository) as server:
        SERVER = server
        result = unittest.main(argv=[sys.argv[0], "-v"], exit=False).result
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
