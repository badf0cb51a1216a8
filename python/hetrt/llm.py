"""Language models TVM compiled the way MLC-LLM builds them, on hetrt's engine.

A model folder holds the library (one ``.so``) and its weights in TVM's tensor
cache (``tensor-cache.json`` + ``params_shard_*.bin``, in the folder or in its
``params/``)::

    import hetrt.llm
    engine = hetrt.llm.Engine("tiny_llama", device="cpu")
    engine.generate([1, 2, 3], max_tokens=8)                 # [ids...]
    engine.generate_batch([[1, 2], [3, 4, 5]], max_tokens=8)  # [[ids...], [ids...]]
    for token in engine.stream([1, 2, 3], max_tokens=8): ...
    engine.logits([1, 2, 3])                                  # numpy float32 (vocab,)

Sampling: ``temperature`` 0 is greedy (the default); ``top_p``, ``top_k``,
``repetition_penalty``, ``presence_penalty``, ``frequency_penalty`` as in
OpenAI's and vLLM's APIs; ``seed`` makes sampled runs reproducible;
``stop_token_ids`` end a sequence (the stop token is the last one returned).
A sequence whose logits leave no token to draw (NaN) raises ``InternalError``
naming it; the others of its batch are unaffected.
Sequences of one ``generate_batch`` run together, joining and leaving the
decode batch as they start and finish (continuous batching).
"""
from . import _hetrt
from ._hetrt import InternalError

__all__ = ["Engine"]


class Engine:
    """Opens a model folder (or ``library=`` + ``weights=``) on one device."""

    def __init__(self, model_dir="", device="cpu", *, library="", weights="", max_batch_size=0,
                 max_total_seq_len=0, prefill_chunk_size=0):
        if hasattr(device, "device_type"):  # a hetrt.Device
            device = f"{device.kind}:{device.index}" if hasattr(device, "kind") else str(device)
        self._engine = _hetrt.LlmEngine(str(model_dir), str(device), str(library), str(weights),
                                        int(max_batch_size), int(max_total_seq_len), int(prefill_chunk_size))

    @property
    def info(self):
        """The library's metadata and the engine's sizes, as a dict."""
        return self._engine.info

    def _add(self, prompt_ids, max_tokens, temperature, top_p, top_k, repetition_penalty, presence_penalty,
             frequency_penalty, seed, stop_token_ids):
        if isinstance(prompt_ids, str):
            raise TypeError("prompt_ids must be token ids (a list of ints); text prompts need a tokenizer")
        return self._engine.add_request([int(t) for t in prompt_ids], int(max_tokens), float(temperature),
                                        float(top_p), int(top_k), float(repetition_penalty),
                                        float(presence_penalty), float(frequency_penalty),
                                        None if seed is None else int(seed),
                                        [int(t) for t in (stop_token_ids or [])])

    def stream(self, prompt_ids, max_tokens=16, temperature=0.0, top_p=1.0, top_k=0, repetition_penalty=1.0,
               presence_penalty=0.0, frequency_penalty=0.0, seed=None, stop_token_ids=None):
        """Yields the generated token ids one by one, as they are sampled."""
        request = self._add(prompt_ids, max_tokens, temperature, top_p, top_k, repetition_penalty,
                            presence_penalty, frequency_penalty, seed, stop_token_ids)
        done = False
        try:
            while not done:
                for req, token, finish, error in self._engine.step():
                    if req != request:
                        continue
                    if finish == "error":
                        done = True
                        raise InternalError(error)
                    if token >= 0:
                        yield token
                    done = done or bool(finish)
        finally:
            if not done:
                self._engine.cancel(request)

    def generate_batch(self, prompts, max_tokens=16, temperature=0.0, top_p=1.0, top_k=0,
                       repetition_penalty=1.0, presence_penalty=0.0, frequency_penalty=0.0, seed=None,
                       stop_token_ids=None):
        """The generated token ids of each prompt, run together; a list of lists."""
        requests = []
        try:
            for prompt in prompts:
                requests.append(self._add(prompt, max_tokens, temperature, top_p, top_k, repetition_penalty,
                                          presence_penalty, frequency_penalty, seed, stop_token_ids))
            out = {r: [] for r in requests}
            left = set(requests)
            while left:
                for req, token, finish, error in self._engine.step():
                    if req not in out:
                        continue
                    if finish == "error":  # the except below cancels the others
                        raise InternalError(f"prompt {requests.index(req)}: {error}")
                    if token >= 0:
                        out[req].append(token)
                    if finish:
                        left.discard(req)
            return [out[r] for r in requests]
        except BaseException:
            for r in requests:
                self._engine.cancel(r)
            raise

    def generate(self, prompt_ids, max_tokens=16, **settings):
        """The generated token ids of one prompt, as a list."""
        return self.generate_batch([prompt_ids], max_tokens, **settings)[0]

    def logits(self, prompt_ids):
        """The last position's logits after the prompt: a float32 numpy array (vocab,)."""
        if isinstance(prompt_ids, str):
            raise TypeError("prompt_ids must be token ids (a list of ints); text prompts need a tokenizer")
        return self._engine.logits([int(t) for t in prompt_ids])

    @property
    def kv_available_pages(self):
        return self._engine.kv_available_pages
