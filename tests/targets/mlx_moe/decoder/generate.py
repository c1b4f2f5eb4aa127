"""Prompts, sampling, and one pass: prefill the prompt, then decode token by token.

Decode keeps one step in flight (`async_eval`): step i + 1 is built and queued while step i
runs, so the host builds graphs while the device computes, as an inference engine does."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import mlx.core as mx

from .model import Decoder
from .ops import ops

CHAT_TEMPLATE = "<|im_start|>user\n{}<|im_end|>\n<|im_start|>assistant\n"
# A prime stride spreads a repeated short prompt over the vocabulary.
PROMPT_STRIDE = 7919


def prompt_ids(text: str, chat_template: bool, target_tokens: int | None, vocab: int) -> list[int]:
    """Byte-level ids of the prompt; with a target length, a deterministic long prompt built
    from those bytes (what `-p x --prompt-tokens 512` asks for)."""
    body = CHAT_TEMPLATE.format(text) if chat_template else text
    base = [b % vocab for b in body.encode()]
    if target_tokens is None:
        return base
    return [(base[i % len(base)] + PROMPT_STRIDE * i) % vocab for i in range(target_tokens)]


@dataclass
class Sampler:
    temperature: float
    top_p: float
    seed: int
    _key: mx.array | None = field(default=None, init=False)

    def __call__(self, logits: mx.array) -> mx.array:
        """(1,) int32: greedy at temperature 0, else nucleus sampling."""
        if self.temperature <= 0:
            return ops.astype(ops.argmax(logits, axis=-1), mx.int32)
        if self._key is None:
            self._key = ops.random.key(self.seed)
        self._key, step_key = ops.random.split(self._key)
        probs = ops.softmax(ops.divide(logits, self.temperature), axis=-1)
        order = ops.argsort(ops.negative(probs), axis=-1)
        ranked = ops.take_along_axis(probs, order, axis=-1)
        before = ops.subtract(ops.cumsum(ranked, axis=-1), ranked)
        kept = ops.where(ops.less(before, self.top_p), ops.log(ranked), -float("inf"))
        choice = ops.random.categorical(kept, key=step_key)
        return ops.astype(ops.take_along_axis(order, ops.expand_dims(choice, -1), axis=-1)[0],
                          mx.int32)


@dataclass(frozen=True)
class PassResult:
    prompt_tokens: int
    generated: list[int]
    prefill_s: float
    decode_s: float


@dataclass(frozen=True)
class Stop:
    eos_token_id: int
    ignore_eos: bool

    def at(self, token: int) -> bool:
        return not self.ignore_eos and token == self.eos_token_id


def run_pass(model: Decoder, ids: list[int], max_tokens: int, sample: Sampler, stop: Stop,
             on_decode_start: Callable[[], None] = lambda: None,
             dot_path: str | None = None) -> PassResult:
    """Prefill `ids`, then up to `max_tokens` decode steps; each step consumes the previous
    token (the first consumes the token sampled from the prefill logits) and yields one."""
    cache = model.new_cache(len(ids) + max_tokens + 1)
    start = time.perf_counter()
    first = sample(model(ops.array(ids, dtype=mx.int32), cache, 0))
    mx.eval(first)
    prefill_s = time.perf_counter() - start
    on_decode_start()

    def step(token: mx.array, position: int) -> mx.array:
        return sample(model(token, cache, position))

    generated: list[int] = []
    start = time.perf_counter()
    pending = step(first, len(ids)) if max_tokens else None
    if pending is not None:
        if dot_path:
            mx.export_to_dot(dot_path, pending)  # one whole decode token, before it runs
        mx.async_eval(pending)
    for i in range(max_tokens):
        assert pending is not None
        current = pending
        if i + 1 < max_tokens:  # queue the next step before waiting on this one
            pending = step(current, len(ids) + i + 1)
            mx.async_eval(pending)
        token = int(current.item())
        generated.append(token)
        if stop.at(token):
            break
    return PassResult(len(ids), generated, prefill_s, time.perf_counter() - start)
