"""hetrt.llm: the tiny Llama TVM v0.25 compiled, through the Python engine:
TVM's greedy tokens and logits, batches, streaming, seeds, and errors."""

import json
import os
import subprocess

import numpy as np
import pytest

import hetrt
import hetrt.llm
from conftest import FIXTURES

LLM = FIXTURES.parent / "tvm-0.25-llm" / "tiny_llama"


def model_dir():
    if not LLM.is_dir():
        wanted = os.environ.get("HETRT_REQUIRE", "").split(",")
        if ("all" in wanted or "fixtures" in wanted) and "-fixtures" not in wanted:
            pytest.fail(f"fixtures are required (HETRT_REQUIRE) but {LLM} is missing")
        pytest.skip(f"{LLM} not present (set HETRT_FIXTURES)")
    return LLM


@pytest.fixture(scope="module")
def engine():
    return hetrt.llm.Engine(model_dir(), device="cpu")


@pytest.fixture(scope="module")
def plan():
    return json.loads((model_dir() / "meta.json").read_text())["plan"]


def test_greedy_generation_reproduces_tvm(engine, plan):
    single = plan["single"]
    tokens = engine.generate(single["prompt"], max_tokens=13)
    assert tokens == single["generated"] + [single["next_after_last"]]


def test_prefill_logits_match_tvm(engine, plan):
    expected = np.load(model_dir() / "single_prefill_logits.npy").reshape(-1)
    got = engine.logits(plan["single"]["prompt"])
    assert got.dtype == np.float32 and got.shape == (256,)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_batch_matches_tvm_and_streaming_equals_generate(engine, plan):
    batch = plan["batch"]
    want = [[step[i] for step in batch["decode_inputs"]] + [batch["next_after_last"][i]]
            for i in range(len(batch["prompts"]))]
    assert engine.generate_batch(batch["prompts"], max_tokens=9) == want
    assert list(engine.stream(batch["prompts"][1], max_tokens=9)) == want[1]


def test_seeded_sampling_is_reproducible(engine):
    settings = dict(max_tokens=12, temperature=0.8, top_p=0.9, top_k=40, seed=7)
    a = engine.generate([3, 4, 5], **settings)
    b = engine.generate([3, 4, 5], **settings)
    assert a == b and len(a) == 12
    penalised = engine.generate([3, 4, 5], repetition_penalty=1.3, presence_penalty=0.5, frequency_penalty=0.5,
                                **settings)
    assert len(penalised) == 12


def test_bad_input_raises_and_the_engine_goes_on(engine, plan):
    with pytest.raises(ValueError, match="vocabulary"):
        engine.generate([1, 999], max_tokens=2)
    with pytest.raises(ValueError, match="context"):
        engine.generate([1] * 120, max_tokens=20)
    with pytest.raises(ValueError, match="max_tokens"):
        engine.generate([1], max_tokens=-1)
    with pytest.raises(TypeError):
        engine.generate("hello", max_tokens=2)
    pages = engine.kv_available_pages
    single = plan["single"]
    assert engine.generate(single["prompt"], max_tokens=2) == (single["generated"] + [0])[:2]
    assert engine.kv_available_pages == pages


def test_a_folder_without_weights_names_what_is_missing(tmp_path):
    (tmp_path / "model.so").write_bytes((model_dir() / "model.so").read_bytes())
    with pytest.raises(hetrt.Error, match="tensor-cache.json"):
        hetrt.llm.Engine(tmp_path)


def test_leaving_a_stream_early_frees_its_pages(engine, plan):
    pages = engine.kv_available_pages
    stream = engine.stream(plan["single"]["prompt"], max_tokens=20)
    first = [next(stream), next(stream)]
    assert first == plan["single"]["generated"][:2]
    assert engine.kv_available_pages < pages
    stream.close()  # the consumer walks away: the request is cancelled
    assert engine.kv_available_pages == pages


def test_a_sequence_with_nan_logits_raises_alone(tmp_path):
    # Token 7's embedding row set to NaN in a copy: a prompt holding it has no
    # token to draw; the error names it, and the engine goes on.
    (tmp_path / "params").mkdir()
    (tmp_path / "model.so").write_bytes((model_dir() / "model.so").read_bytes())
    for f in (model_dir() / "params").iterdir():
        (tmp_path / "params" / f.name).write_bytes(f.read_bytes())
    index = json.loads((tmp_path / "params" / "tensor-cache.json").read_text())
    shard, record = next((s, r) for s in index["records"] for r in s["records"]
                         if r["name"] == "model.embed_tokens.weight")
    assert record["dtype"] == "float32"
    hidden = record["shape"][1]
    with open(tmp_path / "params" / shard["dataPath"], "r+b") as f:
        f.seek(record["byteOffset"] + 7 * hidden * 4)
        f.write(np.full(hidden, np.nan, dtype=np.float32).tobytes())
    engine = hetrt.llm.Engine(tmp_path, device="cpu")
    pages = engine.kv_available_pages
    clean = engine.generate([1, 2, 3], max_tokens=6)
    with pytest.raises(hetrt.InternalError, match="prompt 1: .*NaN"):
        engine.generate_batch([[1, 2, 3], [4, 7, 5]], max_tokens=6)
    with pytest.raises(hetrt.InternalError, match="NaN"):
        list(engine.stream([7], max_tokens=6))
    assert engine.kv_available_pages == pages
    assert engine.generate([1, 2, 3], max_tokens=6) == clean
    # The CLI says which sequence failed, and why, and exits 1.
    cli = os.environ.get("HETRT_CLI")
    if cli:
        run = subprocess.run([cli, "generate", str(tmp_path), "--prompt-ids", "1,2,3", "--prompt-ids", "7",
                              "--max-tokens", "4"], capture_output=True, text=True, timeout=120)
        assert run.returncode == 1, run.stdout + run.stderr
        assert "sequence 1: request" in run.stderr and "NaN" in run.stderr, run.stderr
        assert "sequence 0: " + ",".join(map(str, clean[:4])) in run.stdout, run.stdout
