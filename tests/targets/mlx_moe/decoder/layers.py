"""The dense pieces of a decoder layer: quantized projections, RMSNorm, attention with a KV cache,
and the SwiGLU MLP that shared experts use."""

from __future__ import annotations

from dataclasses import dataclass

import mlx.core as mx

from .config import ModelConfig
from .ops import ops
from .weights import QWeight, maker


def qlinear(x: mx.array, w: QWeight) -> mx.array:
    return ops.quantized_matmul(x, w.w, w.scales, w.biases, transpose=True,
                                group_size=w.quant.group_size, bits=w.quant.bits,
                                mode=w.quant.mode)


def swiglu(gate: mx.array, up: mx.array) -> mx.array:
    return ops.multiply(ops.multiply(gate, ops.sigmoid(gate)), up)


@dataclass(frozen=True)
class Mlp:
    gate: QWeight
    up: QWeight
    down: QWeight

    @staticmethod
    def build(c: ModelConfig, name: str, width: int, dtype: mx.Dtype) -> Mlp:
        make = maker(c.seed, name, c.quant, dtype)
        return Mlp(make("gate", width, c.hidden), make("up", width, c.hidden),
                   make("down", c.hidden, width))

    def __call__(self, x: mx.array) -> mx.array:
        return qlinear(swiglu(qlinear(x, self.gate), qlinear(x, self.up)), self.down)


class KVCache:
    """One layer's keys and values, allocated once for the whole pass and filled in place."""

    def __init__(self, c: ModelConfig, length: int, dtype: mx.Dtype) -> None:
        shape = (1, c.kv_heads, length, c.head_dim)
        self.keys = ops.zeros(shape, dtype=dtype)
        self.values = ops.zeros(shape, dtype=dtype)

    def update(self, k: mx.array, v: mx.array, offset: int) -> tuple[mx.array, mx.array]:
        at = ops.array([0, 0, offset, 0])
        self.keys = ops.slice_update(self.keys, k, at, (0, 1, 2, 3))
        self.values = ops.slice_update(self.values, v, at, (0, 1, 2, 3))
        size = (1, k.shape[1], offset + k.shape[2], k.shape[3])
        start = ops.array([0, 0, 0, 0])
        return (ops.slice(self.keys, start, (0, 1, 2, 3), size),
                ops.slice(self.values, start, (0, 1, 2, 3), size))


@dataclass(frozen=True)
class Attention:
    q: QWeight
    k: QWeight
    v: QWeight
    o: QWeight
    q_norm: mx.array | None
    k_norm: mx.array | None
    heads: int
    kv_heads: int
    head_dim: int
    rope_theta: float
    eps: float

    @staticmethod
    def build(c: ModelConfig, name: str, dtype: mx.Dtype) -> Attention:
        proj = maker(c.seed, name, c.quant, dtype)
        qk_norm = c.family == "qwen3_moe"  # Qwen3 normalises queries and keys per head
        norm = ops.ones((c.head_dim,), dtype=dtype) if qk_norm else None
        return Attention(proj("q", c.heads * c.head_dim, c.hidden),
                         proj("k", c.kv_heads * c.head_dim, c.hidden),
                         proj("v", c.kv_heads * c.head_dim, c.hidden),
                         proj("o", c.hidden, c.heads * c.head_dim),
                         norm, norm, c.heads, c.kv_heads, c.head_dim, c.rope_theta, c.rms_eps)

    def __call__(self, x: mx.array, cache: KVCache, offset: int) -> mx.array:
        tokens = x.shape[1]
        q = self._heads(qlinear(x, self.q), self.heads, self.q_norm, offset)
        k = self._heads(qlinear(x, self.k), self.kv_heads, self.k_norm, offset)
        v = ops.transpose(ops.reshape(qlinear(x, self.v), (1, tokens, self.kv_heads,
                                                            self.head_dim)), (0, 2, 1, 3))
        keys, values = cache.update(k, v, offset)
        out = ops.fast.scaled_dot_product_attention(
            q, keys, values, scale=self.head_dim ** -0.5, mask="causal" if tokens > 1 else None)
        out = ops.reshape(ops.transpose(out, (0, 2, 1, 3)), (1, tokens, self.heads * self.head_dim))
        return qlinear(out, self.o)

    def _heads(self, x: mx.array, heads: int, norm: mx.array | None, offset: int) -> mx.array:
        x = ops.transpose(ops.reshape(x, (1, x.shape[1], heads, self.head_dim)), (0, 2, 1, 3))
        if norm is not None:
            x = ops.fast.rms_norm(x, norm, self.eps)
        return ops.fast.rope(x, self.head_dim, traditional=False, base=self.rope_theta, scale=1.0,
                             offset=offset)
