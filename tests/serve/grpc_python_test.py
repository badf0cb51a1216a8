"""`hetrt serve` over gRPC, through Debian's python3-grpcio (a gRPC stack hetrt did not write).

Message classes come from serve/proto/grpc_service.proto through `protoc --python_out`
at test time; calls go through channel.unary_unary on the protocol's method paths, as a
generated stub would. Usage: grpc_python_test.py HETRT_BINARY (fixtures from
$HETRT_FIXTURES, default <repo>/../shared/fixtures).
"""
import concurrent.futures
import importlib
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import server_process  # noqa: E402

# CI requires every client: a missing one fails, naming what to install.
try:
    import grpc
    import google.protobuf  # noqa: F401
    import numpy as np
except ImportError as error:
    sys.exit(f"FAIL: {error.name} is missing: install python3-grpcio, python3-protobuf and python3-numpy "
             "(scripts/setup.sh)")

FIXTURES = os.environ.get("HETRT_FIXTURES", os.path.join(REPO_ROOT, "..", "shared", "fixtures"))
SERVICE = "inference.GRPCInferenceService"
HEALTH_SERVICE = "grpc.health.v1.Health"

# grpc.health.v1 as gRPC publishes it (Debian ships no health.proto; grpcio's
# health package is not packaged): the two messages the Check call uses.
HEALTH_PROTO = """
syntax = "proto3";
package grpc.health.v1;
message HealthCheckRequest { string service = 1; }
message HealthCheckResponse {
  enum ServingStatus { UNKNOWN = 0; SERVING = 1; NOT_SERVING = 2; SERVICE_UNKNOWN = 3; }
  ServingStatus status = 1;
}
"""


def generate_messages(out_dir):
    """grpc_service_pb2 and health_pb2, made by protoc from the project's .proto."""
    protoc = shutil.which("protoc")
    if protoc is None:
        sys.exit("FAIL: protoc is missing: install protobuf-compiler (scripts/setup.sh)")
    with open(os.path.join(out_dir, "health.proto"), "w") as f:
        f.write(HEALTH_PROTO)
    subprocess.check_call([protoc, "-I", os.path.join(REPO_ROOT, "serve", "proto"), "-I", out_dir,
                           "--python_out=" + out_dir, "grpc_service.proto", "health.proto"])
    sys.path.insert(0, out_dir)
    return importlib.import_module("grpc_service_pb2"), importlib.import_module("health_pb2")


def fixture(model, name):
    return np.load(os.path.join(FIXTURES, "tvm-0.18", model, name))


class GrpcClient:
    """Calls by method path, as the stubs grpc_tools would generate do."""

    def __init__(self, address, pb, health_pb):
        self.channel = grpc.insecure_channel(address, options=[("grpc.max_receive_message_length", 64 << 20)])
        self.pb = pb
        self.health_pb = health_pb

    def call(self, method, request, response_type, service=SERVICE, timeout=60):
        rpc = self.channel.unary_unary(f"/{service}/{method}", request_serializer=type(request).SerializeToString,
                                       response_deserializer=response_type.FromString)
        return rpc(request, timeout=timeout)

    def infer(self, request):
        return self.call("ModelInfer", request, self.pb.ModelInferResponse)


class GrpcServeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.hetrt = sys.argv[1]
        cls.messages_dir = tempfile.mkdtemp(prefix="hetrt-grpc-py-")
        cls.pb, cls.health_pb = generate_messages(cls.messages_dir)
        cls.repository = server_process.fixture_repository(os.path.join(FIXTURES, "tvm-0.18"), {
            "mlp": ("mlp", ["deploy.so"], None),
            "add3": ("add3", ["deploy.so"], None),
            # Loaded and unloaded by the repository test only.
            "mlp_reload": ("mlp", ["deploy.so"], None),
            "hetero": ("hetero_opencl_seed", ["deploy.so"],
                       {"instance_group": [{"count": 2, "devices": ["cpu", "opencl"]}]}),
        })
        cls.server = server_process.Server(cls.hetrt, cls.repository)
        cls.client = GrpcClient(cls.server.grpc, cls.pb, cls.health_pb)

    @classmethod
    def tearDownClass(cls):
        cls.client.channel.close()
        status = cls.server.stop()
        shutil.rmtree(cls.repository, ignore_errors=True)
        shutil.rmtree(cls.messages_dir, ignore_errors=True)
        if status != 0:
            raise AssertionError("hetrt serve exited with %d:\n%s" % (status, "".join(cls.server.log)))

    # --- helpers -------------------------------------------------------------
    def raw_request(self, model, inputs, **fields):
        """inputs: [(name, numpy array, datatype)] sent in raw_input_contents."""
        request = self.pb.ModelInferRequest(model_name=model, **fields)
        for name, array, datatype in inputs:
            request.inputs.add(name=name, datatype=datatype, shape=list(array.shape))
            request.raw_input_contents.append(np.ascontiguousarray(array).astype("<" + array.dtype.str[1:]).tobytes())
        return request

    def mlp_request(self, **fields):
        return self.raw_request("mlp", [("data", fixture("mlp", "inputs_data.npy"), "FP32")], **fields)

    def assert_output(self, response, index, expected, name="output_0", rtol=1e-4, atol=1e-5):
        self.assertEqual(len(response.raw_output_contents), len(response.outputs))
        output = response.outputs[index]
        self.assertEqual(output.name, name)
        self.assertEqual(output.datatype, "FP32")
        self.assertEqual(list(output.shape), list(expected.shape))
        got = np.frombuffer(response.raw_output_contents[index], dtype="<f4").reshape(expected.shape)
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)

    def assert_code(self, code, call, *args, contains=None):
        with self.assertRaises(grpc.RpcError) as raised:
            call(*args)
        self.assertEqual(raised.exception.code(), code, raised.exception.details())
        if contains is not None:
            self.assertIn(contains, raised.exception.details())
        return raised.exception.details()

    # --- the .proto itself ----------------------------------------------------
    # Field numbers as the Open Inference Protocol's grpc_predict_v2 and Triton's
    # grpc_service.proto publish them: a renumbered field breaks every real client
    # silently (both ends of this test would still agree).
    PUBLISHED_FIELDS = {
        "ServerLiveResponse": {"live": 1},
        "ServerReadyResponse": {"ready": 1},
        "ModelReadyRequest": {"name": 1, "version": 2},
        "ModelReadyResponse": {"ready": 1},
        "ServerMetadataResponse": {"name": 1, "version": 2, "extensions": 3},
        "ModelMetadataRequest": {"name": 1, "version": 2},
        "ModelMetadataResponse": {"name": 1, "versions": 2, "platform": 3, "inputs": 4, "outputs": 5},
        "ModelMetadataResponse.TensorMetadata": {"name": 1, "datatype": 2, "shape": 3},
        "InferParameter": {"bool_param": 1, "int64_param": 2, "string_param": 3, "double_param": 4,
                           "uint64_param": 5},
        "InferTensorContents": {"bool_contents": 1, "int_contents": 2, "int64_contents": 3, "uint_contents": 4,
                                "uint64_contents": 5, "fp32_contents": 6, "fp64_contents": 7, "bytes_contents": 8},
        "ModelInferRequest": {"model_name": 1, "model_version": 2, "id": 3, "parameters": 4, "inputs": 5,
                              "outputs": 6, "raw_input_contents": 7},
        "ModelInferRequest.InferInputTensor": {"name": 1, "datatype": 2, "shape": 3, "parameters": 4, "contents": 5},
        "ModelInferRequest.InferRequestedOutputTensor": {"name": 1, "parameters": 2},
        "ModelInferResponse": {"model_name": 1, "model_version": 2, "id": 3, "parameters": 4, "outputs": 5,
                               "raw_output_contents": 6},
        "ModelInferResponse.InferOutputTensor": {"name": 1, "datatype": 2, "shape": 3, "parameters": 4,
                                                 "contents": 5},
        "ModelRepositoryParameter": {"bool_param": 1, "int64_param": 2, "string_param": 3, "bytes_param": 4},
        "RepositoryIndexRequest": {"repository_name": 1, "ready": 2},
        "RepositoryIndexResponse": {"models": 1},
        "RepositoryIndexResponse.ModelIndex": {"name": 1, "version": 2, "state": 3, "reason": 4},
        "RepositoryModelLoadRequest": {"repository_name": 1, "model_name": 2, "parameters": 3},
        "RepositoryModelUnloadRequest": {"repository_name": 1, "model_name": 2, "parameters": 3},
        "ModelStreamInferResponse": {"error_message": 1, "infer_response": 2},
    }

    def test_proto_has_the_published_names_and_field_numbers(self):
        file = self.pb.DESCRIPTOR
        self.assertEqual(file.package, "inference")
        service = file.services_by_name["GRPCInferenceService"]
        self.assertEqual(sorted(m.name for m in service.methods), sorted([
            "ServerLive", "ServerReady", "ModelReady", "ServerMetadata", "ModelMetadata", "ModelInfer",
            "ModelStreamInfer", "RepositoryIndex", "RepositoryModelLoad", "RepositoryModelUnload"]))
        for path, fields in self.PUBLISHED_FIELDS.items():
            outer, _, inner = path.partition(".")
            message = file.message_types_by_name[outer]
            if inner:
                message = message.nested_types_by_name[inner]
            self.assertEqual({f.name: f.number for f in message.fields}, fields, path)

    # --- server and model metadata -----------------------------------------
    def test_server_live_ready_metadata(self):
        pb = self.pb
        self.assertTrue(self.client.call("ServerLive", pb.ServerLiveRequest(), pb.ServerLiveResponse).live)
        self.assertTrue(self.client.call("ServerReady", pb.ServerReadyRequest(), pb.ServerReadyResponse).ready)
        metadata = self.client.call("ServerMetadata", pb.ServerMetadataRequest(), pb.ServerMetadataResponse)
        self.assertEqual(metadata.name, "hetrt")
        self.assertNotEqual(metadata.version, "")

    def test_model_ready(self):
        pb = self.pb
        for model in ("mlp", "add3", "hetero"):
            response = self.client.call("ModelReady", pb.ModelReadyRequest(name=model), pb.ModelReadyResponse)
            self.assertTrue(response.ready, model)
        self.assertTrue(self.client.call("ModelReady", pb.ModelReadyRequest(name="mlp", version="1"),
                                         pb.ModelReadyResponse).ready)
        self.assert_code(grpc.StatusCode.NOT_FOUND, self.client.call, "ModelReady",
                         pb.ModelReadyRequest(name="no_such_model"), pb.ModelReadyResponse)

    def test_model_metadata(self):
        pb = self.pb
        metadata = self.client.call("ModelMetadata", pb.ModelMetadataRequest(name="mlp"), pb.ModelMetadataResponse)
        self.assertEqual(metadata.name, "mlp")
        self.assertIn("1", list(metadata.versions))
        self.assertNotEqual(metadata.platform, "")
        self.assertEqual([(t.name, t.datatype, list(t.shape)) for t in metadata.inputs], [("data", "FP32", [1, 784])])
        self.assertEqual([(t.name, t.datatype, list(t.shape)) for t in metadata.outputs],
                         [("output_0", "FP32", [1, 10])])
        hetero = self.client.call("ModelMetadata", pb.ModelMetadataRequest(name="hetero"), pb.ModelMetadataResponse)
        self.assertEqual(sorted(t.name for t in hetero.inputs), ["x", "y"])
        self.assert_code(grpc.StatusCode.NOT_FOUND, self.client.call, "ModelMetadata",
                         pb.ModelMetadataRequest(name="no_such_model"), pb.ModelMetadataResponse)

    def test_health_check(self):
        hp = self.health_pb
        for service in ("", SERVICE):
            response = self.client.call("Check", hp.HealthCheckRequest(service=service), hp.HealthCheckResponse,
                                        service=HEALTH_SERVICE)
            self.assertEqual(response.status, hp.HealthCheckResponse.SERVING, service)
        self.assert_code(grpc.StatusCode.NOT_FOUND, self.client.call, "Check",
                         hp.HealthCheckRequest(service="no.such.Service"), hp.HealthCheckResponse, HEALTH_SERVICE)

    # --- inference -----------------------------------------------------------
    def test_infer_raw_input_contents(self):
        response = self.client.infer(self.mlp_request(id="request-42"))
        self.assertEqual(response.model_name, "mlp")
        self.assertEqual(response.model_version, "1")
        self.assertEqual(response.id, "request-42")
        self.assertEqual(len(response.outputs), 1)
        self.assert_output(response, 0, fixture("mlp", "output_0.npy"))

    def test_raw_tensors_are_not_copied_between_the_request_and_the_model(self):
        # raw_input_contents is read into aligned memory the graph takes as its
        # input, and the output is written where the response sends it from.
        before = server_process.copied_bytes(self.server.metrics, "mlp")
        for _ in range(3):
            self.assert_output(self.client.infer(self.mlp_request()), 0, fixture("mlp", "output_0.npy"))
        self.assertEqual(server_process.copied_bytes(self.server.metrics, "mlp"), before)

    def test_compressed_requests(self):
        # gRPC decompresses a message before ModelInfer reads its bytes.
        for compression in (grpc.Compression.Gzip, grpc.Compression.Deflate):
            with grpc.insecure_channel(self.server.grpc, compression=compression) as channel:
                rpc = channel.unary_unary(f"/{SERVICE}/ModelInfer",
                                          request_serializer=self.pb.ModelInferRequest.SerializeToString,
                                          response_deserializer=self.pb.ModelInferResponse.FromString)
                self.assert_output(rpc(self.mlp_request(), timeout=60), 0, fixture("mlp", "output_0.npy"))

    def test_infer_typed_contents(self):
        data = fixture("mlp", "inputs_data.npy")
        request = self.pb.ModelInferRequest(model_name="mlp", id="typed")
        tensor = request.inputs.add(name="data", datatype="FP32", shape=list(data.shape))
        tensor.contents.fp32_contents.extend(data.ravel().tolist())
        response = self.client.infer(request)
        self.assertEqual(response.id, "typed")
        # Replies always carry raw_output_contents, whatever the request used.
        self.assert_output(response, 0, fixture("mlp", "output_0.npy"))

    def test_infer_inputs_by_name_in_any_order(self):
        arrays = {n: fixture("add3", f"inputs_{n}.npy") for n in "abc"}
        raw = self.raw_request("add3", [(n, arrays[n], "FP32") for n in "cab"])
        self.assert_output(self.client.infer(raw), 0, fixture("add3", "output_0.npy"))
        typed = self.pb.ModelInferRequest(model_name="add3")
        for n in "bca":
            typed.inputs.add(name=n, datatype="FP32", shape=[1, 10]).contents.fp32_contents.extend(arrays[n].ravel())
        self.assert_output(self.client.infer(typed), 0, fixture("add3", "output_0.npy"))

    def test_infer_cpu_opencl_two_instances(self):
        inputs = [(n, fixture("hetero_opencl_seed", f"inputs_{n}.npy"), "FP32") for n in "xy"]
        expected = fixture("hetero_opencl_seed", "output_0.npy")
        # Concurrent requests reach both instances; every answer is right.
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            responses = list(pool.map(lambda i: self.client.infer(self.raw_request("hetero", inputs, id=str(i))),
                                      range(32)))
        for i, response in enumerate(responses):
            self.assertEqual(response.id, str(i))
            self.assert_output(response, 0, expected)

    def test_infer_concurrency_16(self):
        expected = fixture("mlp", "output_0.npy")
        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            responses = list(pool.map(lambda i: self.client.infer(self.mlp_request(id=f"c{i}")), range(64)))
        for i, response in enumerate(responses):
            self.assertEqual(response.id, f"c{i}")
            self.assert_output(response, 0, expected)

    def test_requested_outputs(self):
        request = self.mlp_request()
        request.outputs.add(name="output_0")
        response = self.client.infer(request)
        self.assertEqual([o.name for o in response.outputs], ["output_0"])
        self.assert_output(response, 0, fixture("mlp", "output_0.npy"))
        unknown = self.mlp_request()
        unknown.outputs.add(name="output_7")
        self.assert_code(grpc.StatusCode.INVALID_ARGUMENT, self.client.infer, unknown, contains="output_7")

    # --- bad requests --------------------------------------------------------
    def test_bad_requests_get_protocol_errors(self):
        pb = self.pb
        data = fixture("mlp", "inputs_data.npy")
        invalid, not_found = grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND
        infer = self.client.infer

        self.assert_code(not_found, infer, self.raw_request("no_such_model", [("data", data, "FP32")]),
                         contains="no_such_model")
        # Unknown input and output names are INVALID_ARGUMENT, as in Triton (docs/serving.md).
        self.assert_code(invalid, infer, self.raw_request("mlp", [("pixels", data, "FP32")]), contains="pixels")
        # INT32 data for an FP32 input, sizes right.
        self.assert_code(invalid, infer, self.raw_request("mlp", [("data", data.astype(np.int32), "INT32")]))
        wrong_type = pb.ModelInferRequest(model_name="mlp")
        wrong_type.inputs.add(name="data", datatype="INT32", shape=[1, 784]).contents.int_contents.extend([1] * 784)
        self.assert_code(invalid, infer, wrong_type)
        # Raw bytes that disagree with shape x datatype.
        short = self.raw_request("mlp", [("data", data, "FP32")])
        short.raw_input_contents[0] = short.raw_input_contents[0][:-4]
        self.assert_code(invalid, infer, short, contains="data")
        # Typed values that disagree with the shape.
        few = pb.ModelInferRequest(model_name="mlp")
        few.inputs.add(name="data", datatype="FP32", shape=[1, 784]).contents.fp32_contents.extend([0.5] * 100)
        self.assert_code(invalid, infer, few, contains="data")
        # Values in the field of another datatype.
        misplaced = pb.ModelInferRequest(model_name="mlp")
        misplaced.inputs.add(name="data", datatype="FP32", shape=[1, 784]).contents.fp64_contents.extend([0.5] * 784)
        self.assert_code(invalid, infer, misplaced, contains="fp64_contents")
        # A shape the model does not have, bytes consistent with it.
        self.assert_code(invalid, infer, self.raw_request("mlp", [("data", data.reshape(784), "FP32")]))
        self.assert_code(invalid, infer, self.raw_request("mlp", [("data", data, "FP33")]), contains="FP33")
        # Both raw_input_contents and contents in one request.
        both = self.raw_request("mlp", [("data", data, "FP32")])
        both.inputs[0].contents.fp32_contents.extend(data.ravel())
        self.assert_code(invalid, infer, both)
        # One raw entry per input, or none.
        extra = self.raw_request("mlp", [("data", data, "FP32")])
        extra.raw_input_contents.append(b"\0" * 16)
        self.assert_code(invalid, infer, extra, contains="raw_input_contents")
        # Negative dimensions.
        negative = pb.ModelInferRequest(model_name="mlp")
        negative.inputs.add(name="data", datatype="FP32", shape=[-1, 784])
        self.assert_code(invalid, infer, negative)
        # Larger than gRPC's default 4 MiB: read and answered about its size,
        # not refused by the transport.
        big = self.raw_request("mlp", [("data", data, "FP32")])
        big.raw_input_contents[0] = b"\0" * (6 << 20)
        self.assert_code(invalid, infer, big, contains="data")

        # The server keeps serving.
        self.assert_output(infer(self.mlp_request()), 0, fixture("mlp", "output_0.npy"))

    def test_int8_values_out_of_range(self):
        request = self.pb.ModelInferRequest(model_name="mlp")
        request.inputs.add(name="data", datatype="INT8", shape=[1, 2]).contents.int_contents.extend([1, 300])
        self.assert_code(grpc.StatusCode.INVALID_ARGUMENT, self.client.infer, request, contains="300")

    # --- repository extension ------------------------------------------------
    def test_repository_index_unload_load(self):
        pb = self.pb
        index = self.client.call("RepositoryIndex", pb.RepositoryIndexRequest(), pb.RepositoryIndexResponse)
        states = {m.name: m.state for m in index.models}
        self.assertEqual(states.get("mlp"), "READY", states)
        self.assertEqual(states.get("hetero"), "READY", states)

        self.client.call("RepositoryModelUnload", pb.RepositoryModelUnloadRequest(model_name="mlp_reload"),
                         pb.RepositoryModelUnloadResponse)
        ready = pb.ModelReadyRequest(name="mlp_reload")
        try:
            self.assertFalse(self.client.call("ModelReady", ready, pb.ModelReadyResponse).ready)
        except grpc.RpcError as error:  # an unloaded model may also be unknown
            self.assertEqual(error.code(), grpc.StatusCode.NOT_FOUND)
        request = self.raw_request("mlp_reload", [("data", fixture("mlp", "inputs_data.npy"), "FP32")])
        with self.assertRaises(grpc.RpcError) as raised:
            self.client.infer(request)
        self.assertIn(raised.exception.code(), (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.NOT_FOUND))
        ready_only = self.client.call("RepositoryIndex", pb.RepositoryIndexRequest(ready=True),
                                      pb.RepositoryIndexResponse)
        self.assertNotIn("mlp_reload", [m.name for m in ready_only.models])

        self.client.call("RepositoryModelLoad", pb.RepositoryModelLoadRequest(model_name="mlp_reload"),
                         pb.RepositoryModelLoadResponse)
        self.assertTrue(self.client.call("ModelReady", ready, pb.ModelReadyResponse).ready)
        self.assert_output(self.client.infer(request), 0, fixture("mlp", "output_0.npy"))

        self.assert_code(grpc.StatusCode.UNIMPLEMENTED, self.client.call, "RepositoryIndex",
                         pb.RepositoryIndexRequest(repository_name="elsewhere"), pb.RepositoryIndexResponse)
        self.assert_code(grpc.StatusCode.NOT_FOUND, self.client.call, "RepositoryModelLoad",
                         pb.RepositoryModelLoadRequest(model_name="no_such_model"), pb.RepositoryModelLoadResponse)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    if not os.path.isdir(os.path.join(FIXTURES, "tvm-0.18", "mlp")):
        sys.exit(server_process.missing_fixtures(FIXTURES))
    unittest.main(argv=sys.argv[:1], verbosity=2)
