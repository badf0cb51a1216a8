"""`hetrt serve` over REST with the binary tensor data extension, from Python.

The client is the standard library's http.client and numpy (Debian's python3),
written from the protocol's documents: inputs as raw little-endian bytes after
the JSON (Inference-Header-Content-Length), outputs asked for as binary, mixed
JSON and binary inputs, and every malformed binary request answered 400 while
the server keeps serving. Outputs are checked against the fixtures' expected
outputs.

Usage: rest_binary_test.py HETRT  (HETRT_FIXTURES: the fixtures' folder)
"""
import http.client
import json
import os
import re
import shutil
import socket
import sys
import threading
import time
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_process import Server, copied_bytes, fixture_repository, missing_fixtures  # noqa: E402

HETRT = None
FIXTURES = None
SERVER = None
MAX_REQUEST_BYTES = 1 << 20  # --max-request-mib 1: small, so that "too large" is cheap to send

DATATYPES = {np.dtype(np.float32): "FP32", np.dtype(np.float64): "FP64", np.dtype(np.int8): "INT8",
             np.dtype(np.int32): "INT32", np.dtype(np.int64): "INT64", np.dtype(np.uint8): "UINT8",
             np.dtype(np.float16): "FP16", np.dtype(np.bool_): "BOOL"}
NUMPY_TYPES = {name: dtype for dtype, name in DATATYPES.items()}


def fixture(model, name):
    return np.load(os.path.join(FIXTURES, model, name))


def request_body(inputs, outputs=None, binary_output=None, request_id=None):
    """inputs: [(name, array, binary?)]; outputs: [(name, binary or None)].

    Returns (body bytes, JSON header length).
    """
    tensors, blobs = [], []
    for name, array, binary in inputs:
        tensor = {"name": name, "shape": list(array.shape), "datatype": DATATYPES[array.dtype]}
        if binary:
            data = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes()
            tensor["parameters"] = {"binary_data_size": len(data)}
            blobs.append(data)
        else:
            tensor["data"] = array.flatten().tolist()
        tensors.append(tensor)
    request = {"inputs": tensors}
    if request_id is not None:
        request["id"] = request_id
    if binary_output is not None:
        request["parameters"] = {"binary_data_output": binary_output}
    if outputs is not None:
        request["outputs"] = [{"name": n} if b is None else {"name": n, "parameters": {"binary_data": b}}
                              for n, b in outputs]
    header = json.dumps(request).encode()
    return header + b"".join(blobs), len(header)


class Reply:
    def __init__(self, response):
        self.status = response.status
        self.headers = {k.lower(): v for k, v in response.getheaders()}
        self.body = response.read()
        length = self.headers.get("inference-header-content-length")
        self.json_length = int(length) if length is not None else len(self.body)
        self.json = json.loads(self.body[:self.json_length]) if self.body else None

    def outputs(self):
        """{name: array} from JSON data or the binary section, in order."""
        result, offset = {}, self.json_length
        for out in self.json["outputs"]:
            dtype = NUMPY_TYPES[out["datatype"]]
            size = out.get("parameters", {}).get("binary_data_size")
            if size is None:
                result[out["name"]] = np.array(out["data"], dtype=dtype).reshape(out["shape"])
            else:
                raw = self.body[offset:offset + size]
                offset += size
                result[out["name"]] = np.frombuffer(raw, dtype=dtype.newbyteorder("<")).reshape(out["shape"])
        assert offset == len(self.body), f"{len(self.body) - offset} unexplained bytes after the outputs"
        return result


def post(path, body, headers=None, connection=None):
    conn = connection or http.client.HTTPConnection(*SERVER.http.rsplit(":", 1), timeout=30)
    conn.request("POST", path, body=body, headers=headers or {})
    reply = Reply(conn.getresponse())
    if connection is None:
        conn.close()
    return reply


def infer(model, inputs, connection=None, **kwargs):
    body, json_length = request_body(inputs, **kwargs)
    headers = {"Content-Type": "application/octet-stream", "Inference-Header-Content-Length": str(json_length)}
    return post(f"/v2/models/{model}/infer", body, headers, connection)


def mlp_input():
    return fixture("mlp", "inputs_data.npy")


def add3_inputs():
    return [fixture("add3", f"inputs_{n}.npy") for n in "abc"]


class BinaryInference(unittest.TestCase):
    def assertMatchesFixture(self, model, output):
        expected = fixture(model, "output_0.npy")
        self.assertEqual(output.shape, expected.shape)
        self.assertEqual(output.dtype, expected.dtype)
        np.testing.assert_allclose(output, expected, rtol=1e-5, atol=1e-6)

    def test_binary_in_binary_out(self):
        reply = infer("mlp", [("data", mlp_input(), True)], binary_output=True, request_id="bin-1")
        self.assertEqual(reply.status, 200, reply.body[:300])
        self.assertEqual(reply.headers["content-type"], "application/octet-stream")
        self.assertLess(reply.json_length, len(reply.body))
        self.assertEqual(reply.json["id"], "bin-1")
        self.assertEqual(reply.json["model_name"], "mlp")
        self.assertEqual(reply.json["model_version"], "1")
        out = reply.json["outputs"][0]
        self.assertEqual(out["parameters"]["binary_data_size"], 40)
        self.assertNotIn("data", out)
        self.assertMatchesFixture("mlp", reply.outputs()["output_0"])

    def test_binary_tensors_are_not_copied_between_the_request_and_the_model(self):
        # The binary input is read into aligned memory the graph takes as its
        # input, and the output is written where the response sends it from.
        before = copied_bytes(SERVER.metrics, "mlp")
        for _ in range(3):
            reply = infer("mlp", [("data", mlp_input(), True)], binary_output=True)
            self.assertEqual(reply.status, 200, reply.body[:300])
            self.assertMatchesFixture("mlp", reply.outputs()["output_0"])
        self.assertEqual(copied_bytes(SERVER.metrics, "mlp"), before)

    def test_binary_in_json_out(self):
        reply = infer("mlp", [("data", mlp_input(), True)])
        self.assertEqual(reply.status, 200, reply.body[:300])
        self.assertEqual(reply.headers["content-type"], "application/json")
        self.assertNotIn("inference-header-content-length", reply.headers)
        self.assertNotIn("id", reply.json)
        self.assertMatchesFixture("mlp", reply.outputs()["output_0"])

    def test_mixed_json_and_binary_inputs(self):
        a, b, c = add3_inputs()
        reply = infer("add3", [("a", a, True), ("b", b, False), ("c", c, True)],
                      outputs=[("output_0", True)])
        self.assertEqual(reply.status, 200, reply.body[:300])
        self.assertIn("binary_data_size", reply.json["outputs"][0]["parameters"])
        self.assertMatchesFixture("add3", reply.outputs()["output_0"])

    def test_inputs_in_any_order(self):
        a, b, c = add3_inputs()
        reply = infer("add3", [("c", c, True), ("a", a, False), ("b", b, True)])
        self.assertEqual(reply.status, 200, reply.body[:300])
        self.assertMatchesFixture("add3", reply.outputs()["output_0"])

    def test_output_binary_false_overrides_request_default(self):
        a, b, c = add3_inputs()
        reply = infer("add3", [("a", a, True), ("b", b, True), ("c", c, True)],
                      binary_output=True, outputs=[("output_0", False)])
        self.assertEqual(reply.status, 200, reply.body[:300])
        self.assertIn("data", reply.json["outputs"][0])
        self.assertMatchesFixture("add3", reply.outputs()["output_0"])

    def test_keep_alive_connection(self):
        conn = http.client.HTTPConnection(*SERVER.http.rsplit(":", 1), timeout=30)
        for i in range(20):
            reply = infer("mlp", [("data", mlp_input(), True)], connection=conn, binary_output=True,
                          request_id=str(i))
            self.assertEqual(reply.status, 200)
            self.assertEqual(reply.json["id"], str(i))
            self.assertMatchesFixture("mlp", reply.outputs()["output_0"])
        conn.close()

    def test_sixteen_concurrent_clients(self):
        errors = []
        a, b, c = add3_inputs()

        def client(k):
            try:
                conn = http.client.HTTPConnection(*SERVER.http.rsplit(":", 1), timeout=60)
                for i in range(10):
                    scale = np.float32(k + 1)
                    reply = infer("add3", [("a", a * scale, True), ("b", b * scale, True), ("c", c * scale, True)],
                                  connection=conn, binary_output=True)
                    if reply.status != 200:
                        errors.append(f"client {k}: {reply.status} {reply.body[:200]!r}")
                        return
                    got = reply.outputs()["output_0"]
                    np.testing.assert_allclose(got, fixture("add3", "output_0.npy") * scale, rtol=1e-5, atol=1e-5)
                conn.close()
            except Exception as e:  # noqa: BLE001 -- reported below
                errors.append(f"client {k}: {e!r}")

        threads = [threading.Thread(target=client, args=(k,)) for k in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])


class BadBinaryRequests(unittest.TestCase):
    """Each gets a 4xx with {"error": ...} naming the problem; the server goes on."""

    def assertError(self, reply, status, *fragments):
        self.assertEqual(reply.status, status, reply.body[:300])
        self.assertEqual(reply.headers["content-type"], "application/json")
        message = reply.json["error"]
        for fragment in fragments:
            self.assertIn(fragment, message)

    def tearDown(self):
        # After every bad request the server still answers a good one.
        reply = infer("mlp", [("data", mlp_input(), True)], binary_output=True)
        self.assertEqual(reply.status, 200)

    def binary_request(self, declared_size, payload, shape=(1, 784), datatype="FP32", header=None):
        body = json.dumps({"inputs": [{"name": "data", "shape": list(shape), "datatype": datatype,
                                       "parameters": {"binary_data_size": declared_size}}]}).encode()
        headers = {"Inference-Header-Content-Length": str(len(body)) if header is None else header}
        return post("/v2/models/mlp/infer", body + payload, headers)

    def test_size_disagrees_with_shape(self):
        data = mlp_input().tobytes()
        self.assertError(self.binary_request(100, data[:100]), 400, "input 'data'", "binary_data_size is 100",
                         "takes 3136 bytes")

    def test_fewer_bytes_than_declared(self):
        data = mlp_input().tobytes()
        self.assertError(self.binary_request(3136, data[:1000]), 400, "only 1000 bytes")

    def test_bytes_left_over(self):
        data = mlp_input().tobytes()
        self.assertError(self.binary_request(3136, data + b"\0" * 7), 400, "7 bytes are left over")

    def test_header_larger_than_body(self):
        self.assertError(self.binary_request(3136, mlp_input().tobytes(), header="999999"), 400,
                         "Inference-Header-Content-Length is 999999")

    def test_header_not_a_number(self):
        self.assertError(self.binary_request(3136, mlp_input().tobytes(), header="12abc"), 400,
                         "Inference-Header-Content-Length must be a byte count")

    def test_header_cuts_json(self):
        self.assertError(self.binary_request(3136, mlp_input().tobytes(), header="10"), 400, "not valid JSON")

    def test_wrong_datatype(self):
        data = mlp_input().astype(np.float64)
        reply = infer("mlp", [("data", data, True)])
        self.assertError(reply, 400, "FP32")

    def test_wrong_shape(self):
        data = np.zeros((1, 783), np.float32)
        reply = infer("mlp", [("data", data, True)])
        self.assertError(reply, 400, "784")

    def test_unknown_input(self):
        reply = infer("mlp", [("nope", mlp_input(), True)])
        self.assertIn(reply.status, (400, 404))
        self.assertIn("nope", reply.json["error"])

    def test_unknown_output(self):
        reply = infer("mlp", [("data", mlp_input(), True)], outputs=[("output_9", True)])
        self.assertIn(reply.status, (400, 404))
        self.assertIn("output_9", reply.json["error"])

    def test_oversized_body(self):
        body = b"{" + b" " * MAX_REQUEST_BYTES + b"}"
        self.assertError(post("/v2/models/mlp/infer", body), 413, str(MAX_REQUEST_BYTES))

    def test_oversized_chunked_body(self):
        # No Content-Length: the limit is enforced while the chunks arrive.
        chunks = (b" " * 65536 for _ in range(MAX_REQUEST_BYTES // 65536 + 2))
        conn = http.client.HTTPConnection(*SERVER.http.rsplit(":", 1), timeout=30)
        conn.request("POST", "/v2/models/mlp/infer", body=chunks, encode_chunked=True,
                     headers={"Transfer-Encoding": "chunked"})
        try:
            reply = Reply(conn.getresponse())
            self.assertError(reply, 413, str(MAX_REQUEST_BYTES))
        except (ConnectionResetError, BrokenPipeError):
            pass  # the server may close before the client finishes sending: also a refusal
        conn.close()

    def test_a_refused_body_is_never_read_as_requests(self):
        # A body refused before its end (too large) holds bytes the server did
        # not read: here a request of their own. The connection must close
        # after the 413, never answer what the body hid.
        hidden = b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n"
        filler = b"\r\n" * (MAX_REQUEST_BYTES // 2 + 64)
        chunked = b"%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n" % (len(filler), filler, len(hidden), hidden)
        sized = filler + hidden
        for path in ("/v2/models/mlp/infer", "/v2/models/tiny/generate", "/v2/health/live"):
            for fields, body in (({"Transfer-Encoding": "chunked"}, chunked), ({"Content-Length": len(sized)}, sized)):
                host, port = SERVER.http.rsplit(":", 1)
                with self.subTest(path=path, fields=fields), socket.create_connection((host, int(port)),
                                                                                       timeout=30) as sock:
                    received = b""
                    try:
                        sock.sendall(raw_request(path, body, fields))
                    except (BrokenPipeError, ConnectionResetError):
                        pass  # closed before the body's end: the refusal may be lost with it
                    try:
                        while chunk := sock.recv(65536):
                            received += chunk
                    except ConnectionResetError:
                        pass
                    statuses = re.findall(rb"^HTTP/1\.1 (\d{3})", received, re.MULTILINE)
                    self.assertLessEqual(len(statuses), 1, received[:2000])
                    if statuses == [b"413"]:
                        self.assertIn(b"connection: close", received.lower(), received[:2000])
                    elif statuses:  # a route-less path: httplib read the body to its end
                        self.assertEqual(statuses, [b"404"], received[:2000])

    def test_gzip_body_refused(self):
        body, json_length = request_body([("data", mlp_input(), True)])
        reply = post("/v2/models/mlp/infer", body,
                     {"Inference-Header-Content-Length": str(json_length), "Content-Encoding": "gzip"})
        self.assertError(reply, 415, "Content-Encoding 'gzip'")

    def test_half_body_then_disconnect(self):
        body, json_length = request_body([("data", mlp_input(), True)])
        host, port = SERVER.http.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=10) as s:
            s.sendall(b"POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\n"
                      b"Inference-Header-Content-Length: %d\r\nContent-Length: %d\r\n\r\n" % (json_length, len(body))
                      + body[:len(body) // 2])
        # tearDown checks the server still serves.

    def test_silent_client_does_not_block_others(self):
        host, port = SERVER.http.rsplit(":", 1)
        idle = [socket.create_connection((host, int(port)), timeout=10) for _ in range(4)]
        try:
            reply = infer("mlp", [("data", mlp_input(), True)], binary_output=True)
            self.assertEqual(reply.status, 200)
        finally:
            for s in idle:
                s.close()


def raw_request(path, body, fields):
    """One HTTP/1.1 request as bytes, with exactly the header fields given."""
    head = f"POST {path} HTTP/1.1\r\nHost: hetrt\r\n" + "".join(f"{k}: {v}\r\n" for k, v in fields.items())
    return head.encode() + b"\r\n" + body


def binary_infer_request(model, request_id, extra_fields=None):
    body, json_length = request_body([("data", mlp_input(), True)], binary_output=True, request_id=request_id)
    fields = {"Content-Type": "application/octet-stream", "Inference-Header-Content-Length": str(json_length),
              "Content-Length": str(len(body)), **(extra_fields or {})}
    return raw_request(f"/v2/models/{model}/infer", body, fields)


def read_responses(sock, count):
    """`count` HTTP responses read off `sock`: [(status, {field: value}, body)]."""
    buffered, responses = b"", []
    while len(responses) < count:
        end = buffered.find(b"\r\n\r\n")
        if end < 0:
            chunk = sock.recv(65536)
            if not chunk:
                raise AssertionError(f"the connection ended after {len(responses)} of {count} responses")
            buffered += chunk
            continue
        lines = buffered[:end].decode().split("\r\n")
        fields = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
        length = int(fields["content-length"])
        while len(buffered) < end + 4 + length:
            chunk = sock.recv(65536)
            if not chunk:
                raise AssertionError("the connection ended inside a response body")
            buffered += chunk
        responses.append((int(lines[0].split()[1]), fields, buffered[end + 4:end + 4 + length]))
        buffered = buffered[end + 4 + length:]
    return responses


def response_id(response):
    status, fields, body = response
    json_length = int(fields.get("inference-header-content-length", len(body)))
    return json.loads(body[:json_length])["id"]


class FastPathConnections(unittest.TestCase):
    """Plain infer requests skip httplib (serve/http_server.h: FastRoute); these
    talk to the server over raw sockets to hold it to HTTP/1.1 on that path."""

    def connect(self, receive_buffer=None):
        host, port = SERVER.http.rsplit(":", 1)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if receive_buffer:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        sock.settimeout(30)
        sock.connect((host, int(port)))
        return sock

    def test_pipelined_requests_are_answered_in_order(self):
        with self.connect() as sock:
            sock.sendall(b"".join(binary_infer_request("mlp", f"p{i}") for i in range(8)))
            responses = read_responses(sock, 8)
        self.assertEqual([r[0] for r in responses], [200] * 8)
        self.assertEqual([response_id(r) for r in responses], [f"p{i}" for i in range(8)])

    def test_chunked_expect_and_close_requests_are_answered_too(self):
        body, json_length = request_body([("data", mlp_input(), True)], binary_output=True, request_id="chunked")
        chunked = raw_request("/v2/models/mlp/infer", f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n",
                              {"Inference-Header-Content-Length": str(json_length),
                               "Transfer-Encoding": "chunked"})
        with self.connect() as sock:
            sock.sendall(chunked + binary_infer_request("mlp", "after-chunked"))
            responses = read_responses(sock, 2)
            self.assertEqual([response_id(r) for r in responses], ["chunked", "after-chunked"])
            sock.sendall(binary_infer_request("mlp", "closing", {"Connection": "close"}))
            (status, fields, _), = read_responses(sock, 1)
            self.assertEqual(status, 200)
            self.assertEqual(fields.get("connection", "").lower(), "close")
            self.assertEqual(sock.recv(1), b"", "the connection stays open after Connection: close")
        with self.connect() as sock:
            request = binary_infer_request("mlp", "expect", {"Expect": "100-continue"})
            head, body = request.split(b"\r\n\r\n", 1)
            sock.sendall(head + b"\r\n\r\n")
            self.assertTrue(sock.recv(64).startswith(b"HTTP/1.1 100"))
            sock.sendall(body)
            self.assertEqual(response_id(read_responses(sock, 1)[0]), "expect")

    def test_a_client_that_does_not_read_its_responses_holds_up_no_one_else(self):
        # Far more response bytes than the socket buffers hold: the server's
        # writes would block, and are left to the connection's worker.
        count = 600
        stalled = self.connect(receive_buffer=4096)
        sender = threading.Thread(target=lambda: stalled.sendall(
            b"".join(binary_infer_request("mlp", f"s{i}") for i in range(count))))
        sender.start()
        try:
            for i in range(5):
                start = time.monotonic()
                reply = infer("mlp", [("data", mlp_input(), True)], binary_output=True)
                self.assertEqual(reply.status, 200)
                self.assertLess(time.monotonic() - start, 2.5, "a client that does not read held up another")
            responses = read_responses(stalled, count)
        finally:
            sender.join()
            stalled.close()
        self.assertEqual([r[0] for r in responses], [200] * count)
        self.assertEqual([response_id(r) for r in responses], [f"s{i}" for i in range(count)])

    def test_a_body_cut_short_closes_only_its_connection(self):
        request = binary_infer_request("mlp", "cut")
        with self.connect() as sock:
            sock.sendall(request[:-100])
            sock.shutdown(socket.SHUT_WR)
            (status, fields, body), = read_responses(sock, 1)
            self.assertEqual(status, 400)
            self.assertIn(b"ended early", body)
            self.assertEqual(sock.recv(1), b"", "the connection stays open after a cut body")
        reply = infer("mlp", [("data", mlp_input(), True)], binary_output=True)
        self.assertEqual(reply.status, 200)

    def test_escaped_and_unknown_targets_are_left_to_the_router(self):
        with self.connect() as sock:
            sock.sendall(binary_infer_request("ml%70", "escaped") + binary_infer_request("nosuch", "unknown"))
            escaped, unknown = read_responses(sock, 2)
        self.assertEqual((escaped[0], response_id(escaped)), (200, "escaped"))
        self.assertEqual(unknown[0], 404)


def main():
    global HETRT, FIXTURES, SERVER
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    HETRT = sys.argv[1]
    root = os.environ.get("HETRT_FIXTURES") or os.path.join(os.path.dirname(__file__), "../../../shared/fixtures")
    FIXTURES = os.path.join(root, "tvm-0.18")
    if not os.path.isdir(os.path.join(FIXTURES, "mlp")):
        return missing_fixtures(root)
    repository = fixture_repository(FIXTURES, {
        "mlp": ("mlp", ["deploy.so"], None),
        "add3": ("add3", ["graph.json", "lib.so", "params.params"], None),
    })
    try:
        with Server(HETRT, repository, ["--max-request-mib", "1"]) as server:
            SERVER = server
            result = unittest.main(argv=[sys.argv[0], "-v"], exit=False).result
    finally:
        shutil.rmtree(repository, ignore_errors=True)
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
