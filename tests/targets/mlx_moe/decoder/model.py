"""The decoder: a quantized embedding, layers of attention and a sparse MoE block, and an LM
head. One call runs one forward pass over some tokens and returns the last token's logits."""

from __future__ import annotations

from dataclasses import dataclass

import mlx.core as mx

from .config import ModelConfig
from .layers import Attention, KVCache, qlinear
from .moe import MoeBlock
from .moe_detail import MoeDetail
from .ops import ops
from .weights import QWeight, quantized


@dataclass(frozen=True)
class Layer:
    attention_norm: mx.array
    attention: Attention
    moe_norm: mx.array
    moe: MoeBlock


@dataclass
class Decoder:
    config: ModelConfig
    dtype: mx.Dtype
    embedding: QWeight
    head: QWeight
    final_norm: mx.array
    layers: list[Layer]
    fused: bool
    detail: MoeDetail

    @staticmethod
    def build(c: ModelConfig, dtype: mx.Dtype, fused: bool, detail: MoeDetail) -> Decoder:
        ones = ops.ones((c.hidden,), dtype=dtype)
        layers = [Layer(ones, Attention.build(c, f"layers.{i}.attention", dtype), ones,
                        MoeBlock.build(c, i, dtype)) for i in range(c.layers)]
        embedding = quantized(c.seed, "embedding", (c.vocab, c.hidden), c.quant, dtype)
        head = embedding if c.tie_embeddings else quantized(c.seed, "head", (c.vocab, c.hidden),
                                                             c.quant, dtype)
        return Decoder(c, dtype, embedding, head, ones, layers, fused, detail)

    def new_cache(self, length: int) -> list[KVCache]:
        return [KVCache(self.config, length, self.dtype) for _ in self.layers]

    def __call__(self, token_ids: mx.array, cache: list[KVCache], offset: int) -> mx.array:
        """token_ids: (tokens,) int32 at positions offset.. ; returns (1, vocab) float32."""
        c = self.config
        tokens = token_ids.shape[0]
        x = self.embed(token_ids)
        for layer, layer_cache in zip(self.layers, cache, strict=True):
            h = ops.fast.rms_norm(x, layer.attention_norm, c.rms_eps)
            h = layer.attention(ops.reshape(h, (1, tokens, c.hidden)), layer_cache, offset)
            x = ops.add(x, ops.reshape(h, (tokens, c.hidden)))
            h = ops.fast.rms_norm(x, layer.moe_norm, c.rms_eps)
            x = ops.add(x, layer.moe(h, token_ids, self.fused, self.detail))
        last = ops.slice(x, ops.array([tokens - 1, 0]), (0, 1), (1, c.hidden))
        logits = qlinear(ops.fast.rms_norm(last, self.final_norm, c.rms_eps), self.head)
        return ops.astype(logits, mx.float32)

    def embed(self, token_ids: mx.array) -> mx.array:
        e = self.embedding
        rows = [ops.take(a, token_ids, axis=0) for a in (e.w, e.scales)]
        biases = None if e.biases is None else ops.take(e.biases, token_ids, axis=0)
        return ops.dequantize(rows[0], rows[1], biases, group_size=e.quant.group_size,
                              bits=e.quant.bits, mode=e.quant.mode, dtype=self.dtype)


def arrays_in(value: object) -> list[mx.array]:
    """Every array a model (or a part of one) holds, so a loader can evaluate its weights."""
    found: list[mx.array] = []
    _collect(value, found, set())
    return found


def _collect(value: object, found: list[mx.array], seen: set[int]) -> None:
    if isinstance(value, mx.array):
        if id(value) not in seen:
            seen.add(id(value))
            found.append(value)
    elif isinstance(value, list | tuple):
        for item in value:
            _collect(item, found, seen)
    elif hasattr(value, "__dataclass_fields__"):
        for name in value.__dataclass_fields__:
            _collect(getattr(value, name), found, seen)
