"""`hetrt serve` with a language model in its repository, over REST (docs/serving-llm.md).

The tiny Llama TVM v0.25 compiled (tvm-0.25-llm/tiny_llama: vocabulary 256,
context 128, prefill chunk 64, batch 4, pages of 16 tokens) served from a
temporary repository. Clients nobody here wrote: Python's http.client and curl.
Checked: the metadata; /generate equals `hetrt generate` (greedy: TVM's own
tokens; seeded sampling with penalties: the same seed); /generate_stream's
Server-Sent Events add up to /generate, the stop token ends a stream; streams
joining and leaving a running batch each get their tokens alone; a client that
closes its connection frees its KV-cache pages; admission by pages (queue full,
queue timeout: 503 with Retry-After; a request that can never fit: 400); bad
requests answered 4xx while a stream goes on; SIGTERM with streams running, with
and without a drain. No timing is asserted: every check is pass/fail.

Usage: llm_serving_test.py HETRT [unittest names...]
       (fixtures from $HETRT_FIXTURES, default <repo>/../shared/fixtures; missing
       fixtures: 77, or 1 when HETRT_REQUIRE asks for them)
"""
import http.client
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import server_process  # noqa: E402

FIXTURES = os.environ.get("HETRT_FIXTURES", os.path.join(REPO_ROOT, "..", "shared", "fixtures"))
LLM_FIXTURES = os.path.join(FIXTURES, "tvm-0.25-llm")
TINY = os.path.join(LLM_FIXTURES, "tiny_llama")
MODEL = "tiny_llama"
# The library's sizes (meta.json "config"); the tests below are sized by them.
VOCAB, CONTEXT, PAGE = 256, 128, 16
HETRT = None  # argv[1]

GENERATION_PARAMETERS = {  # name: (datatype, shape) as the metadata lists them
    "max_tokens": ("INT32", [1]), "temperature": ("FP32", [1]), "top_p": ("FP32", [1]), "top_k": ("INT32", [1]),
    "seed": ("UINT64", [1]), "repetition_penalty": ("FP32", [1]), "presence_penalty": ("FP32", [1]),
    "frequency_penalty": ("FP32", [1]), "stop_token_ids": ("INT32", [-1]),
}
CLI_FLAGS = {"temperature": "--temperature", "top_p": "--top-p", "top_k": "--top-k", "seed": "--seed",
             "repetition_penalty": "--repetition-penalty", "presence_penalty": "--presence-penalty",
             "frequency_penalty": "--frequency-penalty"}


# --- the repository and the reference ------------------------------------------

def make_repository(config=None):
    """REPO/tiny_llama/1/{model.so, params/} linked to the fixture, with config.json when given."""
    return server_process.fixture_repository(LLM_FIXTURES, {MODEL: ("tiny_llama", ["model.so", "params"], config)})


def plan():
    """TVM's recorded runs (meta.json "plan"): the single and batch greedy cases."""
    with open(os.path.join(TINY, "meta.json")) as f:
        return json.load(f)["plan"]


def cli_generate(prompts, max_tokens, **settings):
    """`hetrt generate` on the fixture folder: the token ids of each prompt.

    Relies on its output format: one line "sequence I: ID,ID,..." per prompt (in
    the order given; empty after the colon when no token was generated)."""
    args = [HETRT, "generate", TINY, "--max-tokens", str(max_tokens)]
    for prompt in prompts:
        args += ["--prompt-ids", ",".join(map(str, prompt))]
    for name, value in settings.items():
        if name == "stop_token_ids":
            args += ["--stop-token-ids", ",".join(map(str, value))]
        else:
            args += [CLI_FLAGS[name], repr(value)]
    run = subprocess.run(args, capture_output=True, text=True, timeout=120)
    if run.returncode != 0:
        raise AssertionError(f"{' '.join(args)} exited {run.returncode}:\n{run.stdout}{run.stderr}")
    out = {}
    for line in run.stdout.splitlines():
        if line.startswith("sequence "):
            index, _, ids = line[len("sequence "):].partition(":")
            ids = ids.strip()
            out[int(index)] = [int(t) for t in ids.split(",")] if ids else []
    if sorted(out) != list(range(len(prompts))):
        raise AssertionError(f"`hetrt generate` printed no 'sequence I:' line for each prompt:\n{run.stdout}")
    return [out[i] for i in range(len(prompts))]


def prompt_of(length, seed):
    rng = random.Random(seed)
    return [rng.randrange(VOCAB) for _ in range(length)]


# --- REST clients ----------------------------------------------------------------

def split_address(address):
    host, port = address.rsplit(":", 1)
    return host, int(port)


def post(address, path, body, timeout=60, content_type="application/json"):
    """One POST; (status, {lowercase header: value}, decoded JSON body or the raw text)."""
    conn = http.client.HTTPConnection(*split_address(address), timeout=timeout)
    try:
        data = body if isinstance(body, (bytes, str)) else json.dumps(body)
        conn.request("POST", path, data, {"Content-Type": content_type})
        response = conn.getresponse()
        payload = response.read()
        headers = {k.lower(): v for k, v in response.getheaders()}
    finally:
        conn.close()
    try:
        return response.status, headers, json.loads(payload)
    except ValueError:
        return response.status, headers, payload.decode(errors="replace")


def get(address, path, timeout=30):
    conn = http.client.HTTPConnection(*split_address(address), timeout=timeout)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.read().decode()
    finally:
        conn.close()


def generate(address, body, version=None, model=MODEL):
    path = f"/v2/models/{model}" + (f"/versions/{version}" if version else "") + "/generate"
    return post(address, path, body)


class SseParser:
    """Server-Sent Events (the WHATWG rules a browser's EventSource follows): "data:"
    lines make an event, a blank line ends it, ":" lines are comments. Each event's
    data is one JSON object here."""

    def __init__(self):
        self.data = []

    def line(self, raw):
        """Feeds one line; returns the event it completed (a dict) or None."""
        text = raw.decode() if isinstance(raw, bytes) else raw
        text = text.rstrip("\r\n")
        if text == "":
            if not self.data:
                return None
            event, self.data = "\n".join(self.data), []
            return json.loads(event)
        if text.startswith(":"):
            return None
        field, _, value = text.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "data":
            self.data.append(value)
        return None

    def end(self):
        # EventSource drops an event the stream ends inside of: the server must end each one.
        if self.data:
            raise ValueError(f"the stream ended inside an event (no blank line after it): {self.data!r}")


class StreamResult:
    def __init__(self):
        self.status = None
        self.headers = {}
        self.body = None          # a refused stream's answer (JSON)
        self.events = []
        self.error = None         # what broke the stream on the client's side
        self.first_event_at = None
        self.sent_at = None
        self.cancelled = False    # this client closed it

    @property
    def ids(self):
        return [t for e in self.events for t in e.get("output_ids", [])]

    @property
    def final(self):
        return self.events[-1] if self.events else {}

    def __repr__(self):
        return (f"<stream {self.status} events={len(self.events)} final={self.final} body={self.body} "
                f"error={self.error}>")


def stream(address, body, model=MODEL, on_event=None, close_after=None, timeout=60, sent=None):
    """POST /generate_stream and read its events. on_event(result, event) is called for
    each; close_after=N: after N events the client shuts its socket (cancelling the
    request); sent: a threading.Event set once the request is written."""
    result = StreamResult()
    conn = http.client.HTTPConnection(*split_address(address), timeout=timeout)
    try:
        conn.request("POST", f"/v2/models/{model}/generate_stream", json.dumps(body),
                     {"Content-Type": "application/json", "Accept": "text/event-stream"})
        # Kept here: http.client lets go of conn.sock when the response ends the connection.
        sock = conn.sock
        result.sent_at = time.monotonic()
        if sent is not None:
            sent.set()
        response = conn.getresponse()
        result.status = response.status
        result.headers = {k.lower(): v for k, v in response.getheaders()}
        if response.status != 200:
            payload = response.read()
            try:
                result.body = json.loads(payload)
            except ValueError:
                result.body = payload.decode(errors="replace")
            return result
        parser = SseParser()
        while True:
            line = response.readline()
            if not line:
                parser.end()
                break
            event = parser.line(line)
            if event is None:
                continue
            if result.first_event_at is None:
                result.first_event_at = time.monotonic()
            result.events.append(event)
            if on_event is not None:
                on_event(result, event)
            if close_after is not None and len(result.events) >= close_after and "finish_reason" not in event:
                # shutdown() closes the connection now, whatever else holds the socket.
                sock.shutdown(socket.SHUT_RDWR)
                result.cancelled = True
                break
    except (OSError, http.client.HTTPException, ValueError) as e:
        result.error = repr(e)
    finally:
        if sent is not None:
            sent.set()
        conn.close()
    return result


def read_response(reader):
    """One HTTP/1.1 response from a socket's file: (status, {header: value}, body bytes),
    a chunked body decoded; the body's framing is checked, not trusted."""
    status = int(reader.readline().split()[1])
    headers = {}
    while (line := reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode().partition(":")
        headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = b""
        while (size := int(reader.readline().split(b";")[0], 16)) > 0:
            body += reader.read(size)
            if reader.read(2) != b"\r\n":
                raise ValueError("a chunk not followed by CRLF")
        if reader.readline() != b"\r\n":
            raise ValueError("the chunked body does not end with an empty line")
        return status, headers, body
    return status, headers, reader.read(int(headers.get("content-length", "0")))


def events_of(body):
    parser, events = SseParser(), []
    for line in body.decode().splitlines(keepends=True):
        event = parser.line(line)
        if event is not None:
            events.append(event)
    parser.end()
    return events


def in_threads(functions):
    """Runs each function in its own thread; their results in order."""
    results = [None] * len(functions)

    def run(i):
        try:
            results[i] = functions[i]()
        except BaseException as e:  # noqa: B902 (reported by the caller's checks)
            results[i] = e

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(len(functions))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return results


# --- /metrics --------------------------------------------------------------------

def metric(server, name, **labels):
    return server_process.metric(server.metrics, name, MODEL, **labels)


def pages(server):
    return (metric(server, "hetrt_llm_kv_cache_pages", state="used"),
            metric(server, "hetrt_llm_kv_cache_pages", state="free"))


def ended(server):
    """Requests ended (any finish reason) and refused (any reason), counted by /metrics."""
    return metric(server, "hetrt_llm_request_success_total") + metric(server, "hetrt_llm_requests_rejected_total")


def settle(server, ended_before, count, total_pages, timeout=10.0):
    """Waits until `count` more requests have ended and every KV-cache page is free
    again (the metric exists: free == all); returns (used, free, ended delta)."""
    deadline = time.monotonic() + timeout
    while True:
        used, free = pages(server)
        done = ended(server) - ended_before
        if (used == 0 and free == total_pages and done >= count) or time.monotonic() > deadline:
            return used, free, done
        time.sleep(0.02)


# --- checks ------------------------------------------------------------------------

class LlmCase(unittest.TestCase):
    """One server for the class over a repository with CONFIG as config.json."""
    CONFIG = None
    SERVER_ARGS = ()

    @classmethod
    def setUpClass(cls):
        cls.repository = make_repository(cls.CONFIG)
        cls.server = server_process.Server(HETRT, cls.repository, cls.SERVER_ARGS)
        cls.http = cls.server.http
        status, text = get(cls.http, f"/v2/models/{MODEL}")
        cls.metadata = json.loads(text) if status == 200 else {}
        cls.total_pages = cls.metadata.get("parameters", {}).get("kv_cache_pages")

    @classmethod
    def tearDownClass(cls):
        status = cls.server.stop()
        shutil.rmtree(cls.repository, ignore_errors=True)
        if status != 0:
            raise AssertionError("hetrt serve exited with %d:\n%s" % (status, "".join(cls.server.log)))

    def alone(self, prompt, max_tokens, **settings):
        """/generate of one request with nothing else running: the reference of concurrent runs."""
        status, _, body = generate(self.http, {"input_ids": prompt, "max_tokens": max_tokens, **settings})
        self.assertEqual(status, 200, body)
        return body["output_ids"]

    def assert_error(self, status, headers, body, code, contains=None):
        self.assertEqual(status, code, body)
        self.assertTrue(headers.get("content-type", "").startswith("application/json"), headers)
        self.assertIsInstance(body, dict, body)
        self.assertIsInstance(body.get("error"), str, body)
        self.assertNotEqual(body["error"], "", body)
        if contains is not None:
            self.assertIn(contains, body["error"])

    def assert_retry_later(self, status, headers, body):
        """A 503 of admission or shutdown: Retry-After says when, the body why."""
        self.assert_error(status, headers, body, 503)
        self.assertIn("retry-after", headers, f"a 503 without Retry-After: {headers}")
        self.assertNotEqual(headers["retry-after"].strip(), "")

    def assert_stream(self, result, ids, finish="length", request_id=None, prompt_tokens=None):
        """A whole stream: 200 text/event-stream, one event per token with one id, the
        last with finish_reason and usage, the ids `ids`."""
        self.assertIsNone(result.error, result)
        self.assertEqual(result.status, 200, result)
        self.assertTrue(result.headers.get("content-type", "").startswith("text/event-stream"), result.headers)
        self.assertGreater(len(result.events), 0, result)
        for event in result.events[:-1]:
            self.assertNotIn("finish_reason", event)
            self.assertEqual(len(event.get("output_ids", [])), 1, event)
        for event in result.events:
            self.assertEqual(event.get("model_name"), MODEL, event)
            self.assertEqual(event.get("model_version"), "1", event)
            if request_id is not None:
                self.assertEqual(event.get("id"), request_id, event)
        final = result.final
        self.assertLessEqual(len(final.get("output_ids", [])), 1, final)
        self.assertEqual(final.get("finish_reason"), finish, final)
        self.assertEqual(result.ids, ids)
        self.assertEqual(final.get("usage", {}).get("completion_tokens"), len(ids), final)
        if prompt_tokens is not None:
            self.assertEqual(final["usage"].get("prompt_tokens"), prompt_tokens, final)


class RestGenerateTest(LlmCase):
    """The default configuration: batch 4, the KV cache context x batch (32 pages + 1)."""

    # --- metadata --------------------------------------------------------------
    def test_metadata(self):
        meta = self.metadata
        self.assertEqual(meta.get("name"), MODEL, meta)
        self.assertIn("1", meta.get("versions", []))
        self.assertEqual(meta.get("platform"), "hetrt_llm")
        inputs = {i["name"]: (i["datatype"], i["shape"]) for i in meta["inputs"]}
        self.assertEqual(inputs.get("input_ids"), ("INT32", [-1]))
        # The generation settings are listed beside input_ids, each with its type.
        for name, wanted in GENERATION_PARAMETERS.items():
            self.assertEqual(inputs.get(name), wanted, name)
        self.assertEqual([(o["name"], o["datatype"], o["shape"]) for o in meta["outputs"]],
                         [("output_ids", "INT32", [-1])])
        # The documented entries (more may follow them). Default cache: context x batch.
        parameters = meta.get("parameters", {})
        documented = {"generative": True, "decoupled": True, "vocab_size": VOCAB, "context_window": CONTEXT,
                      "max_batch_size": 4, "kv_cache_pages": CONTEXT * 4 // PAGE + 1, "page_size": PAGE}  # TVM counts a spare page
        self.assertEqual({k: parameters.get(k) for k in documented}, documented)
        status, text = get(self.http, f"/v2/models/{MODEL}/versions/1")
        self.assertEqual(status, 200, text)
        self.assertEqual(json.loads(text).get("platform"), "hetrt_llm")
        self.assertEqual(get(self.http, f"/v2/models/{MODEL}/ready")[0], 200)

    # --- /generate against the CLI and TVM ---------------------------------------
    def test_greedy_equals_tvm_and_the_cli(self):
        single = plan()["single"]
        tvm = single["generated"] + [single["next_after_last"]]
        status, headers, body = generate(self.http, {"id": "r1", "input_ids": single["prompt"], "max_tokens": 13})
        self.assertEqual(status, 200, body)
        self.assertTrue(headers.get("content-type", "").startswith("application/json"), headers)
        self.assertEqual(body, {"model_name": MODEL, "model_version": "1", "id": "r1", "output_ids": tvm,
                                "finish_reason": "length", "usage": {"prompt_tokens": 7, "completion_tokens": 13}})
        self.assertEqual(cli_generate([single["prompt"]], 13), [tvm])
        for length, max_tokens in ((1, 20), (30, 40), (64, 10), (90, 30)):
            prompt = prompt_of(length, length)
            status, _, body = generate(self.http, {"input_ids": prompt, "max_tokens": max_tokens})
            self.assertEqual(status, 200, body)
            self.assertEqual(body["output_ids"], cli_generate([prompt], max_tokens)[0], (length, max_tokens))

    def test_concurrent_greedy_requests_equal_tvms_batch(self):
        batch = plan()["batch"]
        want = [[step[i] for step in batch["decode_inputs"]] + [batch["next_after_last"][i]]
                for i in range(len(batch["prompts"]))]
        answers = in_threads([lambda p=p: generate(self.http, {"input_ids": p, "max_tokens": 9})
                              for p in batch["prompts"]])
        for answer, ids in zip(answers, want):
            self.assertIsInstance(answer, tuple, answer)
            self.assertEqual(answer[0], 200, answer)
            self.assertEqual(answer[2]["output_ids"], ids)

    def test_sampled_equals_the_cli_with_the_same_seed(self):
        cases = [
            (prompt_of(5, 1), dict(temperature=0.8, top_p=0.9, top_k=20, seed=7, repetition_penalty=1.2)),
            (prompt_of(12, 2), dict(temperature=0.8, top_p=0.9, top_k=20, seed=7, presence_penalty=0.5,
                                    frequency_penalty=0.3)),
            (prompt_of(40, 3), dict(temperature=1.1, seed=123456789)),
        ]
        for prompt, settings in cases:
            status, _, body = generate(self.http, {"input_ids": prompt, "max_tokens": 24, **settings})
            self.assertEqual(status, 200, body)
            self.assertEqual(len(body["output_ids"]), 24)
            self.assertEqual(body["output_ids"], cli_generate([prompt], 24, **settings)[0], settings)
            # The same seed again, and the settings inside "parameters": the same tokens.
            status, _, again = generate(self.http, {"input_ids": prompt, "parameters": {"max_tokens": 24, **settings}})
            self.assertEqual(status, 200, again)
            self.assertEqual(again["output_ids"], body["output_ids"])

    def test_request_forms(self):
        prompt = prompt_of(6, 6)
        want = self.alone(prompt, 10)
        for body in ({"input_ids": [prompt], "max_tokens": 10},                # a batch-1 tensor
                     {"input_ids": prompt, "parameters": {"max_tokens": 10}},
                     {"input_ids": prompt, "max_tokens": 10, "stream": False},  # accepted, ignored
                     {"input_ids": prompt, "max_tokens": 10, "stream": True},
                     {"input_ids": prompt, "max_tokens": 10, "temperature": 0, "top_p": 1, "top_k": 0,
                      "repetition_penalty": 1, "presence_penalty": 0, "frequency_penalty": 0}):
            status, _, answer = generate(self.http, body)
            self.assertEqual(status, 200, (body, answer))
            self.assertEqual(answer["output_ids"], want, body)
        status, _, answer = generate(self.http, {"input_ids": prompt, "max_tokens": 10}, version="1")
        self.assertEqual((status, answer.get("output_ids")), (200, want))
        # No id given: none is made up for it.
        self.assertEqual(answer.get("id", ""), "")

    def test_max_tokens_zero(self):
        status, _, body = generate(self.http, {"input_ids": [1, 2, 3], "max_tokens": 0})
        self.assertEqual(status, 200, body)
        self.assertEqual((body["output_ids"], body["finish_reason"]), ([], "length"))
        result = stream(self.http, {"input_ids": [1, 2, 3], "max_tokens": 0})
        self.assertIsNone(result.error, result)
        self.assertEqual(len(result.events), 1, result)
        self.assertEqual((result.ids, result.final.get("finish_reason")), ([], "length"))

    def test_the_default_max_tokens(self):
        # generation.defaults.max_tokens: 16 unless config.json says otherwise.
        status, _, body = generate(self.http, {"input_ids": [5, 6, 7]})
        self.assertEqual(status, 200, body)
        self.assertEqual(body["output_ids"], cli_generate([[5, 6, 7]], 16)[0])

    # --- streams -------------------------------------------------------------------
    def test_stream_equals_generate(self):
        for prompt, max_tokens, settings in ((prompt_of(7, 10), 30, {}),
                                             (prompt_of(70, 11), 20, {}),  # prefilled in two chunks
                                             (prompt_of(3, 12), 25, dict(temperature=0.9, top_k=30, seed=99))):
            body = {"id": "s1", "input_ids": prompt, "max_tokens": max_tokens, **settings}
            status, _, whole = generate(self.http, body)
            self.assertEqual(status, 200, whole)
            self.assert_stream(stream(self.http, body), whole["output_ids"], request_id="s1",
                               prompt_tokens=len(prompt))

    def test_every_http_path_answers_the_same_on_one_connection(self):
        # A plain request (Content-Length) takes the server's fast path; a chunked
        # body and "Connection: close" go through httplib's routes. One kept-alive
        # connection carries them in turn: each response must end where it says.
        body = json.dumps({"id": "p", "input_ids": prompt_of(9, 40), "max_tokens": 12,
                           "temperature": 0.8, "seed": 3}).encode()

        def plain(route, model=MODEL):
            return (f"POST /v2/models/{model}/{route} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(body)}\r\n\r\n").encode() + body

        def chunked(route):
            return (f"POST /v2/models/{MODEL}/{route} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    f"Transfer-Encoding: chunked\r\n\r\n{len(body):x}\r\n").encode() + body + b"\r\n0\r\n\r\n"

        closing = plain("generate_stream").replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n", 1)
        status, _, whole = generate(self.http, json.loads(body))
        self.assertEqual(status, 200, whole)
        nope = chunked("generate_stream").replace(f"/models/{MODEL}/".encode(), b"/models/nope/", 1)
        requests = [plain("generate_stream"), chunked("generate_stream"), plain("generate"), chunked("generate"),
                    plain("generate_stream", "nope"), nope, plain("generate_stream"), closing]
        with socket.create_connection(split_address(self.http), timeout=60) as sock, sock.makefile("rb") as reader:
            answers = []
            for request in requests:
                sock.sendall(request)
                answers.append(read_response(reader))
            self.assertEqual(reader.read(), b"", "the connection stayed open after 'Connection: close'")
        streams = [answers[i] for i in (0, 1, 6, 7)]
        for status, headers, raw in streams:
            result = StreamResult()
            result.status, result.headers, result.events = status, headers, events_of(raw)
            self.assert_stream(result, whole["output_ids"], request_id="p", prompt_tokens=9)
            self.assertEqual(headers.get("cache-control"), "no-cache")
        self.assertEqual(events_of(streams[0][2]), events_of(streams[1][2]))
        for status, headers, raw in answers[2:4]:
            self.assertEqual((status, json.loads(raw)), (200, whole))
            self.assertTrue(headers.get("content-type", "").startswith("application/json"), headers)
        for status, headers, raw in answers[4:6]:
            self.assert_error(status, headers, json.loads(raw), 404, "nope")
        self.assertEqual(json.loads(answers[4][2]), json.loads(answers[5][2]))
        # Which path answered: httplib's responses carry its Keep-Alive field, the
        # fast path's do not (if this fails, the plain requests lost their fast path).
        self.assertEqual(["keep-alive" in a[1] for a in answers], [False, True, False, True, False, True, False, False])

    def test_stop_token_ends_the_stream(self):
        prompt = prompt_of(9, 20)
        free = self.alone(prompt, 30)
        # The last token making its first appearance before max_tokens: the stream
        # stops right after it (a second stop id that never comes changes nothing).
        at = [i for i in range(25) if free[i] not in free[:i]][-1]
        stop = free[at]
        never = next(t for t in range(VOCAB) if t not in free)
        body = {"input_ids": prompt, "max_tokens": 30, "stop_token_ids": [never, stop]}
        status, _, whole = generate(self.http, body)
        self.assertEqual(status, 200, whole)
        self.assertEqual((whole["output_ids"], whole["finish_reason"]), (free[:at + 1], "stop"))
        self.assertEqual(whole["usage"]["completion_tokens"], at + 1)
        result = stream(self.http, body)
        self.assert_stream(result, free[:at + 1], finish="stop")
        self.assertEqual(result.final["output_ids"], [stop])  # the stop token is the last id sent
        self.assertEqual(cli_generate([prompt], 30, stop_token_ids=body["stop_token_ids"])[0], free[:at + 1])

    def test_curl_stream_equals_generate(self):
        curl = shutil.which("curl")
        if curl is None:
            self.fail("curl is missing: install curl (scripts/setup.sh)")
        body = {"id": "curl-1", "input_ids": prompt_of(11, 30), "max_tokens": 24, "temperature": 0.7, "seed": 5}
        status, _, whole = generate(self.http, body)
        self.assertEqual(status, 200, whole)
        with tempfile.NamedTemporaryFile("r", suffix=".headers") as headers:
            # "Expect:": no 100-continue round trip, whatever curl's version.
            run = subprocess.run([curl, "-sS", "-N", "--max-time", "60", "-D", headers.name, "-H", "Expect:",
                                  "-H", "Content-Type: application/json", "--data-binary", json.dumps(body),
                                  f"http://{self.http}/v2/models/{MODEL}/generate_stream"],
                                 capture_output=True, timeout=90)
            head = headers.read()
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertRegex(head.splitlines()[0], r"^HTTP/1\.[01] 200")
        self.assertRegex(head.lower(), r"content-type: text/event-stream")
        parser, result = SseParser(), StreamResult()
        for line in run.stdout.decode().splitlines(keepends=True):
            event = parser.line(line)
            if event is not None:
                result.events.append(event)
        parser.end()
        result.status = 200
        result.headers = {"content-type": "text/event-stream"}
        self.assert_stream(result, whole["output_ids"], request_id="curl-1")

    # --- continuous batching ---------------------------------------------------------
    def test_streams_joining_and_leaving_a_running_batch(self):
        # Prompt lengths across the prefill chunk (64), settings greedy and seeded.
        specs = [(3, 40, {}), (9, 8, dict(temperature=0.8, seed=1)), (17, 25, {}), (33, 30, dict(top_k=10,
                 temperature=1.0, seed=2)), (64, 16, {}), (65, 20, dict(temperature=0.6, top_p=0.8, seed=3)),
                 (70, 50, {}), (5, 60, dict(temperature=0.9, repetition_penalty=1.3, seed=4)), (12, 10, {}),
                 (40, 33, dict(temperature=0.7, seed=5)), (2, 45, {})]
        bodies = [{"id": f"b{i}", "input_ids": prompt_of(n, 100 + i), "max_tokens": m, **s}
                  for i, (n, m, s) in enumerate(specs)]
        want = [self.alone(b["input_ids"], b["max_tokens"],
                           **{k: v for k, v in b.items() if k not in ("id", "input_ids", "max_tokens")})
                for b in bodies]
        # Each stream starts once the one before it has its first token: every one
        # joins a batch that is running, and they leave it at different steps.
        started = [threading.Event() for _ in bodies]

        def client(i):
            if i > 0:
                started[i - 1].wait(60)
            try:
                return stream(self.http, bodies[i], on_event=lambda r, e: started[i].set())
            finally:
                started[i].set()

        results = in_threads([lambda i=i: client(i) for i in range(len(bodies))])
        for i, result in enumerate(results):
            self.assertIsInstance(result, StreamResult, result)
            self.assert_stream(result, want[i], request_id=f"b{i}")
        used, free, _ = settle(self.server, 0, 0, self.total_pages)
        self.assertEqual((used, free), (0, self.total_pages))

    def test_closing_the_connection_cancels_the_stream(self):
        # The closed stream needs 124 tokens of the context (128): it runs for 120
        # decode steps unless cancelled. Three long streams keep the batch busy. A
        # closed connection noticed only after the stream ended would not cancel
        # it: a few tries, and every try must give back every page.
        companions = [{"input_ids": prompt_of(4 + 5 * i, 200 + i), "max_tokens": 100} for i in range(3)]
        want = [self.alone(b["input_ids"], 100) for b in companions]
        victim = {"input_ids": [11, 22, 33, 44], "max_tokens": 120}
        for attempt in range(5):
            cancelled = metric(self.server, "hetrt_llm_request_success_total", finished_reason="cancelled")
            ended_before = ended(self.server)
            running = [threading.Event() for _ in companions]
            results = []

            def companion(i):
                return stream(self.http, companions[i], on_event=lambda r, e: running[i].set())

            threads = [threading.Thread(target=lambda i=i: results.append((i, companion(i)))) for i in range(3)]
            for t in threads:
                t.start()
            for e in running:
                e.wait(60)
            closed = stream(self.http, victim, close_after=1)
            for t in threads:
                t.join(60)
            self.assertIsNone(closed.error, closed)
            self.assertEqual(closed.status, 200, closed)
            for i, result in results:
                self.assert_stream(result, want[i])
            used, free, done = settle(self.server, ended_before, 4, self.total_pages)
            self.assertEqual((used, free), (0, self.total_pages), "KV-cache pages still held after the streams ended")
            self.assertGreaterEqual(done, 4)
            if closed.cancelled and metric(self.server, "hetrt_llm_request_success_total",
                                           finished_reason="cancelled") > cancelled:
                break
        else:
            self.fail("in 5 tries, no closed stream was counted finished_reason=\"cancelled\"")
        # The server goes on.
        self.assertEqual(self.alone(companions[0]["input_ids"], 100), want[0])

    def test_closing_the_connection_cancels_a_whole_answer(self):
        # /generate answers once, at the end: while its tokens come, the handler
        # must still notice the client leaving, also behind a next request it
        # pipelined. The victim needs 120 decode steps beside three long
        # streams; it is closed once it runs.
        companions = [{"input_ids": prompt_of(4 + 5 * i, 210 + i), "max_tokens": 100} for i in range(3)]
        body = json.dumps({"input_ids": [11, 22, 33, 44], "max_tokens": 120}).encode()
        request = (f"POST /v2/models/{MODEL}/generate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   f"Content-Length: {len(body)}\r\n\r\n").encode() + body
        # (Larger than the server reads ahead, 4 KiB, smaller than the kernel holds:
        # some stays unread there, and the client's FIN still arrives behind it.)
        big = json.dumps({"input_ids": [1] * 5000, "max_tokens": 1}).encode()
        pipelined = (f"POST /v2/models/{MODEL}/generate HTTP/1.1\r\nHost: x\r\n"
                     f"Content-Length: {len(big)}\r\n\r\n").encode() + big
        for pipelined in (b"", pipelined):
            with self.subTest(pipelined=len(pipelined)):
                self.close_while_running(companions, request + pipelined)

    def close_while_running(self, companions, request):
        for attempt in range(5):
            cancelled = metric(self.server, "hetrt_llm_request_success_total", finished_reason="cancelled")
            ended_before = ended(self.server)
            running = [threading.Event() for _ in companions]
            threads = [threading.Thread(target=stream, args=(self.http, companions[i]),
                                        kwargs={"on_event": lambda r, e, i=i: running[i].set()}) for i in range(3)]
            for t in threads:
                t.start()
            for e in running:
                e.wait(60)
            with socket.create_connection(split_address(self.http), timeout=60) as sock:
                sock.sendall(request)
                deadline = time.monotonic() + 10
                while metric(self.server, "hetrt_llm_num_requests_running") < 4 and time.monotonic() < deadline:
                    time.sleep(0.002)
            for t in threads:
                t.join(60)
            used, free, done = settle(self.server, ended_before, 4, self.total_pages)
            self.assertEqual((used, free), (0, self.total_pages), "KV-cache pages still held after the requests ended")
            if metric(self.server, "hetrt_llm_request_success_total", finished_reason="cancelled") > cancelled:
                break
        else:
            self.fail("in 5 tries, no /generate whose client left was counted finished_reason=\"cancelled\"")

    # --- bad requests -----------------------------------------------------------------
    def test_bad_requests_while_a_stream_runs(self):
        long_body = {"input_ids": [3, 1, 4, 1], "max_tokens": 120}
        want = self.alone(long_body["input_ids"], 120)
        first = threading.Event()
        holder = []
        thread = threading.Thread(target=lambda: holder.append(
            stream(self.http, long_body, on_event=lambda r, e: first.set())))
        thread.start()
        first.wait(60)
        path = f"/v2/models/{MODEL}/generate"
        cases = [  # (path, body, status, a name the error must say or None)
            (f"/v2/models/no_such_model/generate", {"input_ids": [1], "max_tokens": 2}, 404, "no_such_model"),
            (f"/v2/models/{MODEL}/versions/9/generate", {"input_ids": [1], "max_tokens": 2}, 404, None),
            (path, {"input_ids": [1.5], "max_tokens": 2}, 400, "input_ids"),
            (path, {"input_ids": ["a"], "max_tokens": 2}, 400, "input_ids"),
            (path, {"input_ids": [1, True], "max_tokens": 2}, 400, "input_ids"),
            (path, {"input_ids": [VOCAB], "max_tokens": 2}, 400, None),
            (path, {"input_ids": [-1], "max_tokens": 2}, 400, None),
            (path, {"input_ids": [], "max_tokens": 2}, 400, "input_ids"),
            (path, {"input_ids": [[1, 2], [3, 4]], "max_tokens": 2}, 400, "input_ids"),  # a batch of 2
            (path, {"max_tokens": 2}, 400, "input_ids"),
            (path, {"input_ids": [1], "max_tokens": -1}, 400, "max_tokens"),
            (path, {"input_ids": [1], "max_tokens": 2.5}, 400, "max_tokens"),
            (path, {"text_input": "hi", "max_tokens": 2}, 400, "text_input"),
            (path, {"input_ids": "1 2 3", "max_tokens": 2}, 400, "input_ids"),
            (path, {"input_ids": [1], "max_tokens": 2, "bogus": 1}, 400, "bogus"),
            (path, {"input_ids": [1], "parameters": {"max_tokens": 2, "bogus": 1}}, 400, "bogus"),
            (path, {"input_ids": [1], "max_tokens": 2, "parameters": {"max_tokens": 2}}, 400, "max_tokens"),
            (path, {"input_ids": [1] * 100, "max_tokens": 100}, 400, None),  # past the context (128)
            (path, '{"input_ids": [1, 2', 400, None),                         # malformed JSON
            (path, "[1, 2, 3]", 400, None),                                   # not an object
            (f"/v2/models/{MODEL}/infer", {"inputs": [{"name": "input_ids", "datatype": "INT32", "shape": [3],
                                                        "data": [1, 2, 3]}]}, 400, "generate"),
        ]
        for where, body, code, names in cases:
            status, headers, answer = post(self.http, where, body)
            with self.subTest(path=where, body=body):
                self.assert_error(status, headers, answer, code, contains=names)
        # A stream is refused the same way, before any event.
        for body, code in (({"input_ids": [VOCAB], "max_tokens": 2}, 400), ({"text_input": "hi"}, 400),
                           ({"input_ids": [1] * 100, "max_tokens": 100}, 400)):
            result = stream(self.http, body)
            self.assert_error(result.status, result.headers, result.body, code)
        result = stream(self.http, {"input_ids": [1], "max_tokens": 2}, model="no_such_model")
        self.assert_error(result.status, result.headers, result.body, 404)
        thread.join(60)
        self.assertEqual(len(holder), 1)
        self.assert_stream(holder[0], want)
        self.assertEqual(self.alone([1, 2, 3], 5), cli_generate([[1, 2, 3]], 5)[0])

    # --- metrics -------------------------------------------------------------------------
    def test_metrics_count_a_request(self):
        status, text = get(self.server.metrics, "/metrics")
        self.assertEqual(status, 200)
        for name, kind in (("time_to_first_token_seconds", "histogram"), ("inter_token_latency_seconds", "histogram"),
                           ("e2e_request_latency_seconds", "histogram"),
                           ("request_queue_time_seconds", "histogram"), ("prompt_tokens_total", "counter"),
                           ("generation_tokens_total", "counter"), ("request_success_total", "counter"),
                           ("num_requests_running", "gauge"), ("num_requests_waiting", "gauge"),
                           ("kv_cache_usage_perc", "gauge"), ("kv_cache_pages", "gauge"),
                           ("num_preemptions_total", "counter"), ("requests_rejected_total", "counter")):
            self.assertIn(f"# TYPE hetrt_llm_{name} {kind}\n", text)
        names = ("hetrt_llm_prompt_tokens_total", "hetrt_llm_generation_tokens_total",
                 "hetrt_llm_time_to_first_token_seconds_count", "hetrt_llm_e2e_request_latency_seconds_count",
                 "hetrt_llm_request_queue_time_seconds_count", "hetrt_llm_inter_token_latency_seconds_count")
        before = {n: metric(self.server, n) for n in names}
        length = metric(self.server, "hetrt_llm_request_success_total", finished_reason="length")
        self.alone(prompt_of(13, 13), 11)
        after = {n: metric(self.server, n) for n in names}
        self.assertEqual(after["hetrt_llm_prompt_tokens_total"] - before["hetrt_llm_prompt_tokens_total"], 13)
        self.assertEqual(after["hetrt_llm_generation_tokens_total"] - before["hetrt_llm_generation_tokens_total"], 11)
        for n in names[2:5]:
            self.assertEqual(after[n] - before[n], 1, n)
        # Between 11 tokens: 10 gaps.
        self.assertEqual(after[names[5]] - before[names[5]], 10)
        self.assertEqual(metric(self.server, "hetrt_llm_request_success_total", finished_reason="length"), length + 1)
        self.assertEqual(metric(self.server, "hetrt_llm_num_preemptions_total"), 0)
        self.assertEqual(pages(self.server), (0, self.total_pages))
        self.assertEqual(metric(self.server, "hetrt_llm_kv_cache_usage_perc"), 0)
        self.assertEqual(metric(self.server, "hetrt_llm_num_requests_running"), 0)
        self.assertEqual(metric(self.server, "hetrt_llm_num_requests_waiting"), 0)


# --- admission ---------------------------------------------------------------------------
# A cache of 96 tokens (6 pages) where a request of prompt 8 + max_tokens 72 (80
# tokens, 5 pages) runs alone: the others wait, or are refused.
ADMITTED = [(prompt_of(8, 300 + i), 72) for i in range(6)]


class AdmissionCase(LlmCase):
    def burst(self, count):
        """`count` requests of ADMITTED released at once, half streams: [(kind, status,
        headers, body or StreamResult, seconds from sending to the answer)]."""
        barrier = threading.Barrier(count)

        def client(i):
            prompt, max_tokens = ADMITTED[i % len(ADMITTED)]
            body = {"input_ids": prompt, "max_tokens": max_tokens}
            barrier.wait(60)
            start = time.monotonic()
            if i % 2:
                r = stream(self.http, body)
                return "stream", r.status, r.headers, r, time.monotonic() - start
            status, headers, answer = generate(self.http, body)
            return "generate", status, headers, answer, time.monotonic() - start

        return in_threads([lambda i=i: client(i) for i in range(count)])

    def check_burst(self, answers, want):
        """Every answer a whole, right generation or a 503 with Retry-After; the 503s' count."""
        refused = 0
        for i, answer in enumerate(answers):
            self.assertIsInstance(answer, tuple, answer)
            kind, status, headers, body, _ = answer
            ids = want[i % len(ADMITTED)]
            if status == 503:
                refused += 1
                self.assert_retry_later(status, headers, body.body if kind == "stream" else body)
            elif kind == "stream":
                self.assert_stream(body, ids)
            else:
                self.assertEqual(status, 200, body)
                self.assertEqual((body["output_ids"], body["finish_reason"]), (ids, "length"))
        return refused

    def want(self):
        return [self.alone(p, m) for p, m in ADMITTED]


class QueueFullTest(AdmissionCase):
    CONFIG = {"max_queue_size": 1, "generation": {"kv_cache_tokens": 96}}

    def test_the_cache_is_what_config_json_says(self):
        self.assertEqual(self.total_pages, 7)  # 96 tokens: 6 pages, and the spare one TVM's count adds
        self.assertEqual(pages(self.server), (0, self.total_pages))

    def test_a_request_that_can_never_fit_is_400(self):
        # 108 tokens: inside the context (128), over the whole cache (96).
        for body in ({"input_ids": prompt_of(8, 1), "max_tokens": 100},
                     {"input_ids": prompt_of(100, 2), "max_tokens": 100}):
            status, headers, answer = generate(self.http, body)
            self.assert_error(status, headers, answer, 400)
            result = stream(self.http, body)
            self.assert_error(result.status, result.headers, result.body, 400)

    def test_a_full_queue_answers_503(self):
        want = self.want()
        rejected = metric(self.server, "hetrt_llm_requests_rejected_total", reason="queue_full")
        timeouts = metric(self.server, "hetrt_llm_requests_rejected_total", reason="queue_timeout")
        # One runs, one waits, the rest of a burst are refused: a burst released at
        # once overlaps a 72-step generation on any machine; tries for a slow client.
        refused = admitted = 0
        for _ in range(3):
            answers = self.burst(12)
            refused += self.check_burst(answers, want)
            admitted += sum(1 for a in answers if a[1] == 200)
            if refused:
                break
        self.assertGreater(refused, 0, "no request of a burst of 12 was refused with max_queue_size 1")
        self.assertGreater(admitted, 0)
        self.assertEqual(metric(self.server, "hetrt_llm_requests_rejected_total", reason="queue_full") - rejected,
                         refused)
        self.assertEqual(metric(self.server, "hetrt_llm_requests_rejected_total", reason="queue_timeout"), timeouts)
        self.assertEqual(pages(self.server), (0, self.total_pages))
        self.assertEqual(metric(self.server, "hetrt_llm_num_requests_waiting"), 0)
        # And the server goes on.
        self.assertEqual(self.alone(*ADMITTED[0]), want[0])


    def test_a_request_whose_client_leaves_while_queued_is_counted_cancelled(self):
        # One stream holds the cache; a second waits behind it and its client
        # leaves: it ends "cancelled" like one that left while running, and every
        # request is counted once.
        before, cancelled = ended(self.server), metric(self.server, "hetrt_llm_request_success_total",
                                                       finished_reason="cancelled")
        prompt, max_tokens = ADMITTED[0]
        body = {"input_ids": prompt, "max_tokens": max_tokens}
        first = threading.Event()
        blocker = threading.Thread(target=stream, args=(self.http, body), kwargs={"on_event": lambda r, e: first.set()})
        blocker.start()
        try:
            self.assertTrue(first.wait(60), "the blocking stream sent no token")
            payload = json.dumps(body).encode()
            with socket.create_connection(split_address(self.http), timeout=30) as sock:
                sock.sendall((f"POST /v2/models/{MODEL}/generate_stream HTTP/1.1\r\nHost: x\r\n"
                              f"Content-Length: {len(payload)}\r\n\r\n").encode() + payload)
                deadline = time.monotonic() + 10
                while metric(self.server, "hetrt_llm_num_requests_waiting") < 1 and time.monotonic() < deadline:
                    time.sleep(0.001)
                self.assertEqual(metric(self.server, "hetrt_llm_num_requests_waiting"), 1)
        finally:
            blocker.join(120)
        used, free, done = settle(self.server, before, 2, self.total_pages)
        self.assertEqual((used, free, done), (0, self.total_pages, 2))
        self.assertEqual(metric(self.server, "hetrt_llm_request_success_total", finished_reason="cancelled"),
                         cancelled + 1)


class QueueTimeoutTest(AdmissionCase):
    CONFIG = {"generation": {"kv_cache_tokens": 96, "queue_timeout_ms": 50}}

    def test_a_request_waiting_past_the_timeout_answers_503(self):
        want = self.want()
        rejected = metric(self.server, "hetrt_llm_requests_rejected_total", reason="queue_timeout")
        full = metric(self.server, "hetrt_llm_requests_rejected_total", reason="queue_full")
        # Twelve 72-step generations that run one at a time: the later ones wait
        # longer than 50 ms however fast a step is.
        refused = 0
        for _ in range(3):
            answers = self.burst(12)
            refused += self.check_burst(answers, want)
            for kind, status, _, _, seconds in answers:
                if status == 503:  # never before its time is up
                    self.assertGreaterEqual(seconds, 0.05)
            if refused:
                break
        self.assertGreater(refused, 0, "no request of 12 serialized by the cache waited past queue_timeout_ms 50")
        self.assertEqual(metric(self.server, "hetrt_llm_requests_rejected_total", reason="queue_timeout") - rejected,
                         refused)
        self.assertEqual(metric(self.server, "hetrt_llm_requests_rejected_total", reason="queue_full"), full)
        self.assertEqual(pages(self.server), (0, self.total_pages))
        self.assertEqual(self.alone(*ADMITTED[1]), want[1])


class NoWaitTest(AdmissionCase):
    """queue_timeout_ms 0: a request is admitted when it arrives or refused at once."""
    CONFIG = {"generation": {"kv_cache_tokens": 96, "queue_timeout_ms": 0}}

    def test_a_request_that_fits_is_admitted(self):
        # Timeouts are weighed after admission: one that fits never counts as late.
        rejected = metric(self.server, "hetrt_llm_requests_rejected_total", reason="queue_timeout")
        want = self.want()
        for (prompt, max_tokens), ids in zip(ADMITTED[:3], want):
            self.assertEqual(self.alone(prompt, max_tokens), ids)
            result = stream(self.http, {"input_ids": prompt, "max_tokens": max_tokens})
            self.assert_stream(result, ids)
        self.assertEqual(metric(self.server, "hetrt_llm_requests_rejected_total", reason="queue_timeout"), rejected)

    def test_a_refusal_written_while_queued_leaves_the_connection_usable(self):
        # On the fast path the relay writes a queued request's 503 itself; the kept-alive
        # connection must then read its next request as usual.
        want = self.want()
        prompt, max_tokens = ADMITTED[0]
        body = json.dumps({"input_ids": prompt, "max_tokens": max_tokens}).encode()
        request = (f"POST /v2/models/{MODEL}/generate_stream HTTP/1.1\r\nHost: x\r\n"
                   f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body

        def check_stream(answer):
            result = StreamResult()
            result.status, result.headers, result.events = answer[0], answer[1], events_of(answer[2])
            self.assert_stream(result, want[0])

        with socket.create_connection(split_address(self.http), timeout=60) as sock, sock.makefile("rb") as reader:
            refused = False
            for _ in range(3):
                # An 80-token stream holds the cache (96 tokens) for 72 steps; the probe,
                # sent at its first token, cannot fit and may not wait.
                first = threading.Event()
                blocker = threading.Thread(target=stream, args=(self.http, json.loads(body)),
                                           kwargs={"on_event": lambda r, e: first.set()})
                blocker.start()
                self.assertTrue(first.wait(60), "the blocking stream sent no token")
                sock.sendall(request)
                answer = read_response(reader)
                blocker.join(120)
                if answer[0] == 503:
                    self.assert_retry_later(answer[0], answer[1], json.loads(answer[2]))
                    refused = True
                    break
                check_stream(answer)  # the blocker's 71 steps ended before the probe arrived
            self.assertTrue(refused, "a request sent while the cache was held was admitted three times")
            sock.sendall(request)
            check_stream(read_response(reader))


class NoWaitTwoInstancesTest(AdmissionCase):
    """queue_timeout_ms 0 with two instances: a request one instance cannot
    take is the other's, not a 503 from the first to look."""
    CONFIG = {"instance_group": [{"count": 2}], "generation": {"kv_cache_tokens": 96, "queue_timeout_ms": 0}}

    def test_a_request_the_other_instance_has_room_for_is_admitted(self):
        # Both instances busy: one's cache full but a page (a 96-token stream),
        # the other's with room (a 48-token one, which cannot fit the first).
        # The probe (18 tokens, 2 pages) fits only the second; whichever
        # scheduler looks first, it must run there.
        full = {"input_ids": prompt_of(8, 500), "max_tokens": 88}
        small = {"input_ids": prompt_of(8, 501), "max_tokens": 40}
        probe = {"input_ids": prompt_of(8, 502), "max_tokens": 10}
        want = self.alone(probe["input_ids"], 10)
        for round_ in range(8):
            started = [threading.Event(), threading.Event()]
            holders = [threading.Thread(target=stream, args=(self.http, body),
                                        kwargs={"on_event": lambda r, e, s=s: s.set()})
                       for body, s in ((full, started[0]), (small, started[1]))]
            holders[0].start()
            try:
                self.assertTrue(started[0].wait(60), "the full stream sent no token")
                holders[1].start()
                self.assertTrue(started[1].wait(60), "the small stream sent no token")
                status, _, answer = generate(self.http, probe)
                self.assertEqual(status, 200, f"round {round_}: {answer}")
                self.assertEqual(answer["output_ids"], want)
            finally:
                for t in holders:
                    if t.ident is not None:  # started
                        t.join(120)


# --- SIGTERM --------------------------------------------------------------------------------

class ShutdownTest(unittest.TestCase):
    STREAMS = 16

    def run_sigterm(self, extra_args):
        """16 greedy streams of 100 tokens (prompts of 4..19), SIGTERM once every one
        reached the server and one has its first token. (results, references, the
        time of the signal, the exit status)."""
        repository = make_repository()
        self.addCleanup(shutil.rmtree, repository, True)
        server = server_process.Server(HETRT, repository, extra_args)
        try:
            bodies = [{"input_ids": prompt_of(4 + i, 400 + i), "max_tokens": 100} for i in range(self.STREAMS)]
            want = []
            for body in bodies:
                status, _, answer = generate(server.http, body)
                self.assertEqual(status, 200, answer)
                want.append(answer["output_ids"])
            ended_before = ended(server)
            sent = [threading.Event() for _ in bodies]
            first = threading.Event()
            results = [None] * len(bodies)

            def client(i):
                results[i] = stream(server.http, bodies[i], on_event=lambda r, e: first.set(), sent=sent[i])

            threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(len(bodies))]
            for t in threads:
                t.start()
            for e in sent:
                e.wait(60)
            first.wait(60)
            # Every request read by the server (running, waiting or ended), so none is
            # lost between the kernel's accept queue and the server's.
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                arrived = (metric(server, "hetrt_llm_num_requests_running")
                           + metric(server, "hetrt_llm_num_requests_waiting") + ended(server) - ended_before)
                if arrived >= len(bodies):
                    break
                time.sleep(0.002)
            signalled = time.monotonic()
            server.proc.send_signal(signal.SIGTERM)
            for t in threads:
                t.join(90)
            status = server.stop(90)
        finally:
            if server.proc.poll() is None:
                server.proc.kill()
                server.proc.wait()
        return results, want, signalled, status, "".join(server.log)

    def check_stream(self, result, want, refused_or_shutdown_ok):
        """A stream ended whole ("length", the reference's ids), with "shutdown" (and
        "error", its ids a prefix of the reference's), or refused 503 before any token.
        Returns "length", "shutdown" or 503."""
        self.assertIsInstance(result, StreamResult, result)
        self.assertIsNone(result.error, result)
        if result.status == 503:
            self.assertTrue(refused_or_shutdown_ok, result)
            self.assertIsInstance(result.body, dict, result)
            self.assertIn("error", result.body)
            self.assertIn("retry-after", result.headers, result.headers)
            return 503
        self.assertEqual(result.status, 200, result)
        self.assertGreater(len(result.events), 0, result)
        final = result.final
        for event in result.events[:-1]:
            self.assertNotIn("finish_reason", event)
        if final.get("finish_reason") == "length":
            self.assertEqual(result.ids, want)
            return "length"
        self.assertTrue(refused_or_shutdown_ok, result)
        self.assertEqual(final.get("finish_reason"), "shutdown", result)
        self.assertIsInstance(final.get("error"), str, final)
        self.assertNotEqual(final["error"], "")
        self.assertEqual(result.ids, want[:len(result.ids)])
        self.assertLess(len(result.ids), len(want))
        return "shutdown"

    def test_sigterm_without_a_drain_ends_the_streams(self):
        results, want, _, status, log = self.run_sigterm(["--drain-timeout-s", "0"])
        outcomes = [self.check_stream(r, w, True) for r, w in zip(results, want)]
        self.assertTrue("shutdown" in outcomes or 503 in outcomes,
                        f"every stream of 16 x 100 tokens ended before SIGTERM took effect: {outcomes}")
        self.assertEqual(status, 0, log)

    def test_sigterm_with_the_default_drain_lets_running_streams_finish(self):
        results, want, signalled, status, log = self.run_sigterm([])
        outcomes = []
        for result, ids in zip(results, want):
            # A stream with a token before the signal was running: it ends whole.
            running = result.first_event_at is not None and result.first_event_at < signalled
            outcome = self.check_stream(result, ids, not running)
            if outcome == "shutdown":  # a stream answered while queued: refused, no token
                self.assertEqual(result.ids, [], result)
            outcomes.append(outcome)
        self.assertIn("length", outcomes)
        self.assertEqual(status, 0, log)


def main():
    global HETRT
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    HETRT = sys.argv[1]
    if not os.path.isfile(os.path.join(TINY, "model.so")):
        return server_process.missing_fixtures(LLM_FIXTURES)
    result = unittest.main(argv=[sys.argv[0], "-v", *sys.argv[2:]], exit=False).result
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
