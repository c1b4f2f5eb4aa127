"""The sparse MoE block: a router per family, and two ways to run the chosen experts.

- gather (`gather_qmm`): every (token, expert) pair is one M = 1 product, B = tokens x top_k
  of them per projection, and the weighted sum of the top_k outputs comes after. This is the
  path mlxcel's deepseek_v4 and inkling take at decode.
- fused (decode only, one token): the chosen experts' packed weights are gathered into one
  matrix per projection, so gate and up are each a single M = 1 `quantized_matmul` over
  top_k x width outputs; the router weights scale the activations, and the down projection reads
  the experts side by side along K, so the weighted sum happens inside its one product. There
  is no combine step, as with mlxcel's fused decode kernel."""

from __future__ import annotations

from dataclasses import dataclass

import mlx.core as mx

from .config import ModelConfig
from .layers import Mlp, swiglu
from .moe_detail import MoeDetail
from .ops import ops
from .weights import QWeight, distinct_choices, maker, normal


@dataclass(frozen=True)
class Experts:
    """One layer's experts, stacked: gate and up (E, width, hidden), down (E, hidden, width)."""

    gate: QWeight
    up: QWeight
    down: QWeight

    @staticmethod
    def build(c: ModelConfig, name: str, dtype: mx.Dtype) -> Experts:
        stack = maker(c.seed, name, c.expert_quant, dtype, lead=(c.experts,))
        return Experts(stack("gate", c.expert_width, c.hidden),
                       stack("up", c.expert_width, c.hidden),
                       stack("down", c.hidden, c.expert_width))


@dataclass(frozen=True)
class MoeBlock:
    config: ModelConfig
    router: mx.array                  # (E, hidden)
    experts: Experts
    shared: Mlp | None
    hash_table: mx.array | None       # (vocab, top_k): deepseek_v4's hash-routed layers

    @staticmethod
    def build(c: ModelConfig, layer: int, dtype: mx.Dtype) -> MoeBlock:
        name = f"layers.{layer}.moe"
        shared = (Mlp.build(c, f"{name}.shared", c.shared_experts * c.expert_width, dtype)
                  if c.shared_experts else None)
        hashed = c.family == "deepseek_v4" and layer < c.hash_layers
        table = distinct_choices(c.seed, f"{name}.hash", c.vocab, c.experts, c.top_k) if hashed \
            else None
        return MoeBlock(c, normal(c.seed, f"{name}.router", (c.experts, c.hidden), dtype,
                                  c.hidden ** -0.5),
                        Experts.build(c, name, dtype), shared, table)

    def __call__(self, x: mx.array, token_ids: mx.array, fused: bool,
                 detail: MoeDetail) -> mx.array:
        """x: (tokens, hidden); token_ids: (tokens,)."""
        tokens = x.shape[0]
        detail.start(x)
        indices, weights = self.route(x, token_ids)
        detail.lap("gate", indices, weights)
        if fused and tokens == 1:
            y = fused_experts(x, indices, weights, self.experts)
            detail.lap("expert", y)
            detail.skip("combine")
        else:
            per_expert = gathered_experts(x, indices, self.experts)
            detail.lap("expert", per_expert)
            y = ops.sum(ops.multiply(per_expert, ops.expand_dims(weights, -1)), axis=-2)
            detail.lap("combine", y)
        detail.report("fused" if fused and tokens == 1 else "gather_qmm", tokens)
        if self.shared is not None:
            y = ops.add(y, self.shared(x))
        return y

    def route(self, x: mx.array, token_ids: mx.array) -> tuple[mx.array, mx.array]:
        """(tokens, top_k) expert indices and their weights, as each family's router makes them."""
        c = self.config
        logits = ops.matmul(x, ops.transpose(self.router))
        if c.family == "qwen3_moe":
            probs = ops.softmax(logits, axis=-1, precise=True)
            indices = top_k(probs, c.top_k)
            weights = ops.take_along_axis(probs, indices, axis=-1)
            if c.norm_topk_prob:
                weights = ops.divide(weights, ops.sum(weights, axis=-1, keepdims=True))
            return indices, weights
        if c.family == "deepseek_v4":
            scores = ops.sqrt(ops.logaddexp(logits, 0.0))  # sqrt(softplus)
            indices = (ops.take(self.hash_table, token_ids, axis=0) if self.hash_table is not None
                       else top_k(scores, c.top_k))
            weights = ops.take_along_axis(scores, indices, axis=-1)
            weights = ops.divide(weights, ops.sum(weights, axis=-1, keepdims=True))
            return indices, ops.multiply(weights, c.routed_scaling)
        # inkling: select on sigmoid scores; weigh by normalising their logs with logsumexp.
        indices = top_k(ops.sigmoid(logits), c.top_k)
        log_scores = ops.negative(ops.logaddexp(ops.negative(logits), 0.0))
        chosen = ops.take_along_axis(log_scores, indices, axis=-1)
        return indices, ops.exp(ops.subtract(chosen, ops.logsumexp(chosen, axis=-1,
                                                                   keepdims=True)))


def top_k(scores: mx.array, k: int) -> mx.array:
    order = ops.argpartition(ops.negative(scores), kth=k - 1, axis=-1)
    return ops.slice(order, ops.array([0, 0]), (0, 1), (scores.shape[0], k))


def gathered_experts(x: mx.array, indices: mx.array, e: Experts) -> mx.array:
    """(tokens, top_k, hidden): each chosen expert's output for its token, before weighting."""
    xe = ops.expand_dims(x, (-2, -3))                                 # (T, 1, 1, H)
    gate = gather_qmm(xe, e.gate, indices)                             # (T, k, 1, W)
    up = gather_qmm(xe, e.up, indices)
    down = gather_qmm(swiglu(gate, up), e.down, indices)               # (T, k, 1, H)
    return ops.squeeze(down, -2)


def gather_qmm(x: mx.array, w: QWeight, indices: mx.array) -> mx.array:
    q = w.quant
    return ops.gather_qmm(x, w.w, w.scales, w.biases, rhs_indices=indices, transpose=True,
                          group_size=q.group_size, bits=q.bits, mode=q.mode)


def fused_experts(x: mx.array, indices: mx.array, weights: mx.array, e: Experts) -> mx.array:
    """(1, hidden): the weighted sum of the chosen experts for one token, in three products."""
    chosen = ops.reshape(indices, (-1,))
    k = chosen.shape[0]
    gate = ops.quantized_matmul(x, *_side_by_side_rows(e.gate, chosen), **_qargs(e.gate))
    up = ops.quantized_matmul(x, *_side_by_side_rows(e.up, chosen), **_qargs(e.up))
    act = ops.reshape(swiglu(gate, up), (k, -1))                       # (k, W)
    scaled = ops.reshape(ops.multiply(act, ops.reshape(weights, (k, 1))), (1, -1))
    return ops.quantized_matmul(scaled, *_side_by_side_cols(e.down, chosen), **_qargs(e.down))


def _side_by_side_rows(w: QWeight, chosen: mx.array) -> list[mx.array | None]:
    """The chosen experts' (W, H) matrices stacked into one (k * W, H) matrix."""
    def rows(a: mx.array) -> mx.array:
        picked = ops.take(a, chosen, axis=0)
        return ops.reshape(picked, (-1, picked.shape[-1]))

    return [rows(w.w), rows(w.scales), None if w.biases is None else rows(w.biases)]


def _side_by_side_cols(w: QWeight, chosen: mx.array) -> list[mx.array | None]:
    """The chosen experts' (H, W) matrices laid side by side into one (H, k * W) matrix: each
    expert's quantization groups stay whole because W is a multiple of the group size."""
    def cols(a: mx.array) -> mx.array:
        picked = ops.transpose(ops.take(a, chosen, axis=0), (1, 0, 2))   # (H, k, ·)
        return ops.reshape(picked, (picked.shape[0], -1))

    return [cols(w.w), cols(w.scales), None if w.biases is None else cols(w.biases)]


def _qargs(w: QWeight) -> dict[str, object]:
    return {"transpose": True, "group_size": w.quant.group_size, "bits": w.quant.bits,
            "mode": w.quant.mode}
