"""`hetrt serve` with a language model over gRPC: ModelStreamInfer, Triton's
decoupled mode (docs/serving-llm.md), through Debian's python3-grpcio.

Message classes come from serve/proto/grpc_service.proto through `protoc
--python_out` at test time; calls go through channel.stream_stream on the
method path, as a generated stub would. Checked: one response per token
(output_ids INT32 [1] in raw_output_contents; the last one with
triton_final_response and finish_reason) adding up to REST /generate for the
same settings (greedy and seeded sampling); the input's forms (INT32 / INT64,
[n] / [1, n], raw / typed contents); several requests on one stream, each as
alone; a refused request answers an error_message and the stream goes on;
requests sent on a stream half-closed at once are all answered; a cancelled
call frees its KV-cache pages; ModelInfer on the model is INVALID_ARGUMENT.

Usage: llm_grpc_test.py HETRT [unittest names...]  (fixtures from $HETRT_FIXTURES)
"""
import importlib
import json
import os
import queue
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import llm_serving_test as llm  # noqa: E402  (the repository, REST clients, /metrics)
import server_process  # noqa: E402

# CI requires every client: a missing one fails, naming what to install.
try:
    import grpc
    from google.protobuf import descriptor_pb2
except ImportError as error:
    sys.exit(f"FAIL: {error.name} is missing: install python3-grpcio and python3-protobuf (scripts/setup.sh)")

SERVICE = "inference.GRPCInferenceService"
MODEL = llm.MODEL


def generate_messages(out_dir):
    """grpc_service_pb2, made by protoc from the project's .proto."""
    protoc = shutil.which("protoc")
    if protoc is None:
        sys.exit("FAIL: protoc is missing: install protobuf-compiler (scripts/setup.sh)")
    subprocess.check_call([protoc, "-I", os.path.join(REPO_ROOT, "serve", "proto"), "--python_out=" + out_dir,
                           "grpc_service.proto"])
    sys.path.insert(0, out_dir)
    return importlib.import_module("grpc_service_pb2")


class Reply:
    """What one request got on a stream: its tokens, responses and end."""

    def __init__(self):
        self.tokens = []
        self.responses = []
        self.finish = None   # finish_reason of the final response
        self.final = False   # triton_final_response seen

    def __repr__(self):
        return f"<reply {len(self.responses)} responses tokens={self.tokens} finish={self.finish}>"


class OpenStream:
    """One ModelStreamInfer call whose requests come from a queue: the client keeps
    the stream open until close() (a half-close), as tritonclient's start_stream does."""

    def __init__(self, channel, pb, timeout=60):
        self.requests = queue.Queue()
        rpc = channel.stream_stream(f"/{SERVICE}/ModelStreamInfer",
                                    request_serializer=pb.ModelInferRequest.SerializeToString,
                                    response_deserializer=pb.ModelStreamInferResponse.FromString)
        self.call = rpc(iter(self.requests.get, None), timeout=timeout)
        self.closed = False

    def send(self, request):
        self.requests.put(request)

    def close(self):
        if not self.closed:
            self.closed = True
            self.requests.put(None)


class LlmGrpcTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.messages_dir = tempfile.mkdtemp(prefix="hetrt-llm-grpc-")
        cls.pb = generate_messages(cls.messages_dir)
        cls.repository = llm.make_repository()
        cls.server = server_process.Server(llm.HETRT, cls.repository)
        cls.channel = grpc.insecure_channel(cls.server.grpc)
        status, text = llm.get(cls.server.http, f"/v2/models/{MODEL}")
        cls.total_pages = json.loads(text)["parameters"]["kv_cache_pages"] if status == 200 else None

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        status = cls.server.stop()
        shutil.rmtree(cls.repository, ignore_errors=True)
        shutil.rmtree(cls.messages_dir, ignore_errors=True)
        if status != 0:
            raise AssertionError("hetrt serve exited with %d:\n%s" % (status, "".join(cls.server.log)))

    # --- helpers --------------------------------------------------------------
    def request(self, prompt, request_id="", datatype="INT32", shape=None, typed=False, uint_seed=False,
                model=MODEL, **settings):
        """A ModelInferRequest: input_ids, and the settings as request parameters
        (integers int64_param, or uint64_param for a uint_seed; reals double_param;
        stop_token_ids a comma-separated string_param)."""
        request = self.pb.ModelInferRequest(model_name=model, id=request_id)
        tensor = request.inputs.add(name="input_ids", datatype=datatype, shape=shape or [len(prompt)])
        if typed:
            (tensor.contents.int_contents if datatype == "INT32" else tensor.contents.int64_contents).extend(prompt)
        else:
            form = "<%di" if datatype == "INT32" else "<%dq"
            request.raw_input_contents.append(struct.pack(form % len(prompt), *prompt))
        for name, value in settings.items():
            parameter = request.parameters[name]
            if name == "stop_token_ids":
                parameter.string_param = ",".join(map(str, value))
            elif isinstance(value, float):
                parameter.double_param = value
            elif name == "seed" and uint_seed:
                parameter.uint64_param = value
            else:
                parameter.int64_param = value
        return request

    def rest(self, prompt, **settings):
        """REST /generate for the same settings: the reference."""
        status, _, body = llm.generate(self.server.http, {"input_ids": prompt, **settings})
        self.assertEqual(status, 200, body)
        return body["output_ids"], body["finish_reason"]

    def take(self, response, replies, errors):
        """Files one response under its request's id; checks its form."""
        if response.error_message:
            errors.append(response)
            return
        r = response.infer_response
        self.assertEqual((r.model_name, r.model_version), (MODEL, "1"))
        self.assertIn(r.id, replies, f"a response for a request not sent: {r.id!r}")
        reply = replies[r.id]
        self.assertFalse(reply.final, f"{r.id}: a response after the final one")
        reply.responses.append(response)
        self.assertEqual(len(r.outputs), len(r.raw_output_contents))
        self.assertLessEqual(len(r.outputs), 1)
        for output, raw in zip(r.outputs, r.raw_output_contents):
            self.assertEqual((output.name, output.datatype, list(output.shape)), ("output_ids", "INT32", [1]))
            self.assertEqual(len(raw), 4)
            reply.tokens.append(struct.unpack("<i", raw)[0])
        final = "triton_final_response" in r.parameters and r.parameters["triton_final_response"].bool_param
        if final:
            reply.final = True
            self.assertIn("finish_reason", r.parameters)
            reply.finish = r.parameters["finish_reason"].string_param
        else:
            # One token per response until the last one.
            self.assertEqual(len(r.outputs), 1, r)
            self.assertNotIn("finish_reason", r.parameters)

    def exchange(self, requests, refused=0, half_close_first=False):
        """Sends `requests` on one stream and reads until each is final (and `refused`
        error responses came); then half-closes and expects the call to end OK.
        {id: Reply}, [error responses]."""
        replies = {r.id: Reply() for r in requests}
        errors = []
        stream = OpenStream(self.channel, self.pb)
        for r in requests:
            stream.send(r)
        if half_close_first:
            stream.close()  # the client is done writing; the answers still come
        try:
            for response in stream.call:
                self.take(response, replies, errors)
                if sum(x.final for x in replies.values()) + len(errors) >= len(requests):
                    break
            stream.close()
            rest = list(stream.call)  # nothing more: the server ends the call
            self.assertEqual(rest, [])
            self.assertEqual(stream.call.code(), grpc.StatusCode.OK, stream.call.details())
        finally:
            stream.close()
            stream.call.cancel()
        self.assertEqual(len(errors), refused, [e.error_message for e in errors])
        return replies, errors

    # --- the .proto -----------------------------------------------------------
    def test_proto_has_triton_streaming_definitions(self):
        service = self.pb.DESCRIPTOR.services_by_name["GRPCInferenceService"]
        method = descriptor_pb2.MethodDescriptorProto()
        service.methods_by_name["ModelStreamInfer"].CopyToProto(method)
        self.assertEqual((method.input_type, method.output_type),
                         (".inference.ModelInferRequest", ".inference.ModelStreamInferResponse"))
        self.assertTrue(method.client_streaming and method.server_streaming)
        fields = {f.name: f.number for f in self.pb.ModelStreamInferResponse.DESCRIPTOR.fields}
        self.assertEqual(fields, {"error_message": 1, "infer_response": 2})

    # --- one request --------------------------------------------------------------
    def test_greedy_stream_equals_rest(self):
        single = llm.plan()["single"]
        replies, _ = self.exchange([self.request(single["prompt"], "g1", max_tokens=13)])
        reply = replies["g1"]
        self.assertEqual(reply.tokens, single["generated"] + [single["next_after_last"]])
        self.assertEqual(len(reply.responses), 13)
        self.assertEqual(reply.finish, "length")
        prompt = llm.prompt_of(70, 1)  # two prefill chunks
        replies, _ = self.exchange([self.request(prompt, "g2", max_tokens=30)])
        self.assertEqual((replies["g2"].tokens, replies["g2"].finish), self.rest(prompt, max_tokens=30))

    def test_seeded_sampling_equals_rest(self):
        prompt = llm.prompt_of(9, 2)
        settings = dict(max_tokens=24, temperature=0.8, top_p=0.9, top_k=20, seed=7, repetition_penalty=1.2)
        want = self.rest(prompt, **settings)
        replies, _ = self.exchange([self.request(prompt, "s1", **settings)])
        self.assertEqual((replies["s1"].tokens, replies["s1"].finish), want)
        # The seed as uint64_param: the same tokens.
        replies, _ = self.exchange([self.request(prompt, "s2", uint_seed=True, **settings)])
        self.assertEqual(replies["s2"].tokens, want[0])
        settings = dict(max_tokens=20, temperature=0.9, seed=11, presence_penalty=0.5, frequency_penalty=0.3)
        replies, _ = self.exchange([self.request(prompt, "s3", **settings)])
        self.assertEqual((replies["s3"].tokens, replies["s3"].finish), self.rest(prompt, **settings))

    def test_input_forms(self):
        prompt = llm.prompt_of(6, 3)
        want = self.rest(prompt, max_tokens=8)[0]
        forms = [dict(datatype="INT32"), dict(datatype="INT64"), dict(datatype="INT32", shape=[1, 6]),
                 dict(datatype="INT64", shape=[1, 6], typed=True), dict(datatype="INT32", typed=True)]
        requests = [self.request(prompt, f"f{i}", max_tokens=8, **form) for i, form in enumerate(forms)]
        replies, _ = self.exchange(requests)
        for i in range(len(forms)):
            self.assertEqual(replies[f"f{i}"].tokens, want, forms[i])

    def test_stop_token_ids_parameter(self):
        prompt = llm.prompt_of(9, 4)
        free = self.rest(prompt, max_tokens=30)[0]
        at = [i for i in range(25) if free[i] not in free[:i]][-1]
        replies, _ = self.exchange([self.request(prompt, "stop", max_tokens=30, stop_token_ids=[free[at]])])
        self.assertEqual((replies["stop"].tokens, replies["stop"].finish), (free[:at + 1], "stop"))

    # --- several requests ------------------------------------------------------------
    def test_two_requests_on_one_stream(self):
        a, b = llm.prompt_of(5, 5), llm.prompt_of(33, 6)
        b_settings = dict(max_tokens=25, temperature=0.7, seed=3)
        want_a, want_b = self.rest(a, max_tokens=40), self.rest(b, **b_settings)
        replies, _ = self.exchange([self.request(a, "a", max_tokens=40), self.request(b, "b", **b_settings)])
        self.assertEqual((replies["a"].tokens, replies["a"].finish), want_a)
        self.assertEqual((replies["b"].tokens, replies["b"].finish), want_b)

    def test_requests_of_a_half_closed_stream_are_answered(self):
        prompts = [llm.prompt_of(4 + 7 * i, 10 + i) for i in range(6)]
        requests = [self.request(p, f"h{i}", max_tokens=20 + 5 * i) for i, p in enumerate(prompts)]
        replies, _ = self.exchange(requests, half_close_first=True)
        for i, p in enumerate(prompts):
            self.assertEqual((replies[f"h{i}"].tokens, replies[f"h{i}"].finish), self.rest(p, max_tokens=20 + 5 * i))

    def test_a_refused_request_does_not_end_the_stream(self):
        good = llm.prompt_of(8, 7)
        want = self.rest(good, max_tokens=60)
        replies, errors = self.exchange([self.request(good, "good", max_tokens=60),
                                         self.request([1, llm.VOCAB], "bad", max_tokens=4)], refused=1)
        self.assertEqual((replies["good"].tokens, replies["good"].finish), want)
        self.assertEqual(replies["bad"].responses, [])
        self.assertNotEqual(errors[0].error_message, "")
        # More refusals, each its own error response, and a request after them.
        bad = [self.request([1, 2], "x1", max_tokens=-1), self.request([1] * 100, "x2", max_tokens=100),
               self.request([1, 2], "x3", model="no_such_model", max_tokens=2),
               self.request([1, 2], "x4", max_tokens=2, bogus=1)]
        replies, errors = self.exchange(bad + [self.request(good, "after", max_tokens=60)], refused=len(bad))
        self.assertEqual((replies["after"].tokens, replies["after"].finish), want)

    # --- cancel ------------------------------------------------------------------------
    def test_cancelling_the_call_frees_its_pages(self):
        # As llm_serving_test's closed stream: 120 decode steps unless cancelled,
        # three REST streams keep the batch busy; a few tries.
        companions = [{"input_ids": llm.prompt_of(4 + 5 * i, 200 + i), "max_tokens": 100} for i in range(3)]
        want = [self.rest(b["input_ids"], max_tokens=100)[0] for b in companions]
        for attempt in range(5):
            cancelled = llm.metric(self.server, "hetrt_llm_request_success_total", finished_reason="cancelled")
            ended_before = llm.ended(self.server)
            running = [threading.Event() for _ in companions]
            results = []
            threads = [threading.Thread(target=lambda i=i: results.append((i, llm.stream(
                self.server.http, companions[i], on_event=lambda r, e: running[i].set())))) for i in range(3)]
            for t in threads:
                t.start()
            for e in running:
                e.wait(60)
            stream = OpenStream(self.channel, self.pb)
            stream.send(self.request([11, 22, 33, 44], "victim", max_tokens=120))
            first = next(stream.call)
            self.assertEqual(first.error_message, "")
            stream.call.cancel()
            stream.close()
            with self.assertRaises(grpc.RpcError) as raised:
                list(stream.call)
            self.assertEqual(raised.exception.code(), grpc.StatusCode.CANCELLED)
            for t in threads:
                t.join(60)
            for i, result in results:
                self.assertIsNone(result.error, result)
                self.assertEqual(result.ids, want[i])
            used, free, done = llm.settle(self.server, ended_before, 4, self.total_pages)
            self.assertEqual((used, free), (0, self.total_pages), "KV-cache pages still held after the calls ended")
            if llm.metric(self.server, "hetrt_llm_request_success_total", finished_reason="cancelled") > cancelled:
                break
        else:
            self.fail("in 5 tries, no cancelled call was counted finished_reason=\"cancelled\"")
        replies, _ = self.exchange([self.request([11, 22, 33, 44], "again", max_tokens=10)])
        self.assertEqual(replies["again"].tokens, self.rest([11, 22, 33, 44], max_tokens=10)[0])

    def test_sigterm_ends_a_stream_the_client_keeps_open(self):
        # tritonclient's start_stream without stop_stream: the call stays open
        # with nothing running. SIGTERM must end it (UNAVAILABLE: a request sent
        # meanwhile would go unanswered) and exit, not wait out gRPC's 30 s
        # grace for the client to half-close.
        server = server_process.Server(llm.HETRT, self.repository)
        try:
            with grpc.insecure_channel(server.grpc) as channel:
                stream = OpenStream(channel, self.pb)
                try:
                    stream.send(self.request([11, 22, 33, 44], "open", max_tokens=4))
                    replies, errors = {"open": Reply()}, []
                    for response in stream.call:
                        self.take(response, replies, errors)
                        if replies["open"].final:
                            break
                    self.assertEqual((replies["open"].finish, errors), ("length", []))
                    signalled = time.monotonic()
                    server.proc.send_signal(signal.SIGTERM)
                    with self.assertRaises(grpc.RpcError) as ended:
                        list(stream.call)
                    self.assertEqual(ended.exception.code(), grpc.StatusCode.UNAVAILABLE, ended.exception.details())
                    self.assertIn("shutting down", ended.exception.details())
                finally:
                    stream.close()
                self.assertEqual(server.stop(60), 0, "".join(server.log))
                self.assertLess(time.monotonic() - signalled, 20, "the server waited for the open stream")
        finally:
            if server.proc.poll() is None:
                server.proc.kill()
                server.proc.wait()

    # --- unary --------------------------------------------------------------------------
    def test_model_infer_is_invalid_argument(self):
        rpc = self.channel.unary_unary(f"/{SERVICE}/ModelInfer",
                                       request_serializer=self.pb.ModelInferRequest.SerializeToString,
                                       response_deserializer=self.pb.ModelInferResponse.FromString)
        with self.assertRaises(grpc.RpcError) as raised:
            rpc(self.request([1, 2, 3], "unary", max_tokens=4), timeout=30)
        self.assertEqual(raised.exception.code(), grpc.StatusCode.INVALID_ARGUMENT, raised.exception.details())
        self.assertIn("ModelStreamInfer", raised.exception.details())


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    llm.HETRT = sys.argv[1]
    if not os.path.isfile(os.path.join(llm.TINY, "model.so")):
        return server_process.missing_fixtures(llm.LLM_FIXTURES)
    result = unittest.main(argv=[sys.argv[0], "-v", *sys.argv[2:]], exit=False).result
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
