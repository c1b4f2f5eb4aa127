"""A tiny MoE decoder: attention, a family's own router, routed (and shared) experts, combine.

The routers differ as mlxcel's families do: qwen3_moe takes softmax over argpartition's top-k;
deepseek_v4 scores with sqrt(softplus) and routes its first `hash_layers` layers by a token
hash table (`take`); inkling scores with a sigmoid and normalises with logaddexp/logsumexp.
"""

import json
import os
import sys
import time
from pathlib import Path

import kernels as k
import numpy as np

FUSED_FAMILIES = {"qwen3_moe"}  # families whose decode reaches the fused kernel
# gather_qmm at M = 1 takes the batched qmm once tokens x top_k reaches this (as MLX's CUDA
# backend does for affine 4-bit); below it, the gathered qmv.
QMM_MIN_ROWS = 8


class Model:
    def __init__(self, path: Path, dtype: str) -> None:
        config = json.loads((path / "config.json").read_text())
        self.family = config.get("family", "qwen3_moe")
        self.layers = int(config["layers"])
        self.hidden = int(config["hidden"])
        self.experts = int(config["experts"])
        self.top_k = int(config["top_k"])
        self.width = int(config["expert_width"])
        self.vocab = int(config.get("vocab", 512))
        self.max_context = config.get("max_context")
        self.hash_layers = int(config.get("hash_layers", 1 if self.family == "deepseek_v4" else 0))
        self.shared = int(config.get("shared_experts", 2 if self.family == "inkling" else 0))
        rng = np.random.default_rng(int(config.get("seed", 0)))
        scale = 1.0 / np.sqrt(self.hidden)

        def draw(*shape: int) -> np.ndarray:
            return (rng.standard_normal(shape) * scale).astype(dtype)

        self.embed = draw(self.vocab, self.hidden)
        self.wqkv = [draw(self.hidden, 3 * self.hidden) for _ in range(self.layers)]
        self.wo = [draw(self.hidden, self.hidden) for _ in range(self.layers)]
        self.router = [draw(self.hidden, self.experts) for _ in range(self.layers)]
        self.w_up = [draw(self.experts, self.hidden, self.width) for _ in range(self.layers)]
        self.w_down = [draw(self.experts, self.width, self.hidden) for _ in range(self.layers)]
        self.w_shared = [(draw(self.hidden, self.width * self.shared),
                          draw(self.width * self.shared, self.hidden))
                         for _ in range(self.layers)] if self.shared else []
        self.hash_table = rng.integers(0, self.experts, (self.vocab, self.top_k))
        self.head = draw(self.hidden, self.vocab)
        self.profile = (self.family == "qwen3_moe"
                        and os.environ.get("MLXCEL_PROFILE_QWEN3_MOE_DETAIL") == "1")
        self.fused = fused_enabled(self.family, self.width)
        self.moe_path = None  # set to "batched" by the mlx-vlm stand-in

    def new_cache(self) -> list[tuple[list[np.ndarray], list[np.ndarray]]]:
        return [([], []) for _ in range(self.layers)]

    def forward(self, tokens: np.ndarray, cache: list) -> np.ndarray:
        with k.launch(k.EMBED):
            x = self.embed[tokens]
        for layer in range(self.layers):
            attended = self.attention(layer, rms(x), cache[layer])
            with k.launch(k.ADD):  # each launch times its own work, never a nested one
                x = x + attended
            mixed = self.moe(layer, rms(x), tokens)
            with k.launch(k.ADD):
                x = x + mixed
        last = rms(x)[-1]
        with k.launch(k.QMV):
            return last @ self.head

    def attention(self, layer: int, x: np.ndarray, cache: tuple[list, list]) -> np.ndarray:
        with k.launch(dense(x)):
            q, key, value = np.split(x @ self.wqkv[layer], 3, axis=-1)
        past = sum(len(c) for c in cache[0])
        with k.launch(k.ROPE):
            q = rope(q, past)
        with k.launch(k.ROPE):
            key = rope(key, past)
        with k.launch(k.KV_UPDATE):
            cache[0].append(key)
        with k.launch(k.KV_UPDATE):
            cache[1].append(value)
        with k.launch(k.SDPA):
            keys, values = np.concatenate(cache[0]), np.concatenate(cache[1])
            scores = q @ keys.T / np.sqrt(self.hidden)
            mask = np.arange(keys.shape[0])[None, :] > (past + np.arange(q.shape[0]))[:, None]
            scores = np.where(mask, -np.inf, scores)
            weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
            weights /= weights.sum(axis=-1, keepdims=True)
            attended = weights @ values
        with k.launch(dense(x)):
            return attended @ self.wo[layer]

    def moe(self, layer: int, x: np.ndarray, tokens: np.ndarray) -> np.ndarray:
        start = time.perf_counter()
        chosen, gates = self.route(layer, x, tokens)
        gate_s, start = time.perf_counter() - start, time.perf_counter()
        if self.moe_path == "batched":
            y = self.batched_experts(layer, x, chosen)
        elif self.fused and x.shape[0] == 1:
            y = self.fused_experts(layer, x, chosen, gates)
        elif x.shape[0] > 1:
            y = self.batched_experts(layer, x, chosen, k.QMM_SM80_GATHER)  # prefill: M > 1
        else:
            y = self.gather_experts(layer, x, chosen)
        expert_s, start = time.perf_counter() - start, time.perf_counter()
        if y.ndim == 2:  # the fused kernel combines in place
            out, combine_s = y, 0.0
        else:
            with k.launch(k.MULTIPLY):
                weighted = gates[:, :, None] * y
            with k.launch(k.COL_SUM):
                out = weighted.sum(axis=1)
            combine_s = time.perf_counter() - start
        if self.moe_path != "batched":
            self._say("fused" if y.ndim == 2 else "gather_qmm", x, gate_s, expert_s, combine_s)
        if not self.shared:
            return out
        shared = self.shared_experts(layer, x)
        with k.launch(k.ADD):
            return out + shared

    def route(self, layer: int, x: np.ndarray, tokens: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
        with k.launch(dense(x)):
            logits = x @ self.router[layer]
        if self.family == "deepseek_v4":
            return self._route_sqrt_softplus(layer, logits, tokens)
        if self.family == "inkling":
            return self._route_sigmoid(logits)
        chosen = top_k(logits, self.top_k)
        with k.launch(k.TAKE_ALONG):
            picked = np.take_along_axis(logits, chosen, axis=-1)
        with k.launch(k.SOFTMAX):
            gates = np.exp(picked - picked.max(axis=-1, keepdims=True))
            gates /= gates.sum(axis=-1, keepdims=True)
        return chosen, gates

    def _route_sqrt_softplus(self, layer: int, logits: np.ndarray, tokens: np.ndarray
                             ) -> tuple[np.ndarray, np.ndarray]:
        with k.launch(k.LOGADDEXP):
            softplus = np.logaddexp(logits, 0.0)
        with k.launch(k.SQRT):
            scores = np.sqrt(softplus)
        if layer < self.hash_layers:
            with k.launch(k.HASH_TAKE):
                chosen = np.take(self.hash_table, tokens % self.vocab, axis=0)
        else:
            chosen = top_k(scores, self.top_k)
        with k.launch(k.TAKE_ALONG):
            picked = np.take_along_axis(scores, chosen, axis=-1)
        with k.launch(k.ROW_SUM):
            total = picked.sum(axis=-1, keepdims=True)
        with k.launch(k.DIVIDE):
            return chosen, picked / total

    def _route_sigmoid(self, logits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        with k.launch(k.SIGMOID):
            scores = 1.0 / (1.0 + np.exp(-logits))
        chosen = top_k(scores, self.top_k)
        with k.launch(k.TAKE_ALONG):
            picked = np.take_along_axis(logits, chosen, axis=-1)
        with k.launch(k.LOGADDEXP):
            log_scores = -np.logaddexp(0.0, -picked)  # log sigmoid
        with k.launch(k.LOGSUMEXP):
            norm = np.logaddexp.reduce(log_scores, axis=-1, keepdims=True)
        with k.launch(k.SUBTRACT):
            log_gates = log_scores - norm
        with k.launch(k.EXP):
            return chosen, np.exp(log_gates)

    def _say(self, path: str, x: np.ndarray, gate_s: float, expert_s: float,
             combine_s: float) -> None:
        if self.profile:
            print(f"[QWEN3_MOE_SPARSE] path={path} tokens={x.shape[0]} gate={gate_s * 1e3:.2f}ms "
                  f"expert={expert_s * 1e3:.2f}ms combine={combine_s * 1e3:.2f}ms",
                  file=sys.stderr)

    def gather_experts(self, layer: int, x: np.ndarray, chosen: np.ndarray) -> np.ndarray:
        """gather_qmm at M = 1: index lists are materialised and each (token, expert) pair
        gathers its expert's weights; B = tokens x top_k picks the kernel."""
        kernel = k.QMM_SM80_GATHER if chosen.size >= QMM_MIN_ROWS else k.GATHER_QMV
        with k.launch(k.ARANGE):
            rows = np.repeat(np.arange(x.shape[0]), self.top_k)
        with k.launch(k.COPY_G_ND):
            inputs = x[rows]
            flat = chosen.reshape(-1)
        with k.launch(kernel):  # every pair copies out its expert's weights: the M = 1 cost
            up = np.stack([inputs[i] @ np.take(self.w_up[layer], e, axis=0)
                           for i, e in enumerate(flat)])
        with k.launch(k.SILU):
            h = silu(up)
        with k.launch(kernel):
            out = np.stack([h[i] @ np.take(self.w_down[layer], e, axis=0)
                            for i, e in enumerate(flat)])
        return out.reshape(x.shape[0], self.top_k, self.hidden)

    def fused_experts(self, layer: int, x: np.ndarray, chosen: np.ndarray,
                      gates: np.ndarray) -> np.ndarray:
        """The fused decode kernel: one launch reads each chosen expert's weights in place and
        combines their outputs."""
        with k.launch(k.FUSED_MOE):
            experts = chosen[0]
            h = silu(x[0] @ self.w_up[layer][experts])  # (top_k, width), one batched matmul
            y = (h[:, None, :] @ self.w_down[layer][experts])[:, 0]
            return (gates[0][:, None] * y).sum(axis=0)[None, :]

    def batched_experts(self, layer: int, x: np.ndarray, chosen: np.ndarray,
                        kernel: tuple[str, str] = k.GATHER_QMV) -> np.ndarray:
        """Tokens sorted by expert, one batched matmul pair per expert (mlx-vlm's path, and
        gather_qmm at M > 1); at one token, the chosen experts' weights are read in place."""
        up, down = self.w_up[layer], self.w_down[layer]
        if x.shape[0] == 1:
            with k.launch(kernel):
                y = [silu(x[0] @ up[e]) @ down[e] for e in chosen[0]]
            return np.stack(y)[None]
        out = np.empty((x.shape[0], self.top_k, self.hidden), dtype=x.dtype)
        for e in np.unique(chosen):
            t, slot = np.nonzero(chosen == e)
            with k.launch(kernel):
                out[t, slot] = silu(x[t] @ up[e]) @ down[e]
        return out

    def shared_experts(self, layer: int, x: np.ndarray) -> np.ndarray:
        up, down = self.w_shared[layer]
        with k.launch(dense(x)):
            h = x @ up
        with k.launch(k.SILU):
            h = silu(h)
        with k.launch(dense(x)):
            return h @ down


def dense(x: np.ndarray) -> tuple[str, str]:
    """A dense quantized matmul: qmv at one row, the qmm GEMM for a prompt."""
    return k.QMV if x.shape[0] == 1 else k.QMM_SM80


def top_k(scores: np.ndarray, count: int) -> np.ndarray:
    with k.launch(k.TOPK_SORT):
        return np.argpartition(-scores, count - 1, axis=-1)[:, :count]


def rms(x: np.ndarray) -> np.ndarray:
    with k.launch(k.RMS_NORM):
        return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + 1e-6)


def rope(x: np.ndarray, offset: int) -> np.ndarray:
    half = x.shape[-1] // 2
    angle = (offset + np.arange(x.shape[0]))[:, None] / 10000 ** (np.arange(half) / half)
    cos, sin = np.cos(angle).astype(x.dtype), np.sin(angle).astype(x.dtype)
    return np.concatenate([x[:, :half] * cos - x[:, half:] * sin,
                           x[:, :half] * sin + x[:, half:] * cos], axis=-1)


def silu(x: np.ndarray) -> np.ndarray:
    return x / (1.0 + np.exp(-x))


def fused_enabled(family: str, width: int) -> bool:
    flag = os.environ.get("MLXCEL_FUSED_MOE", "1").strip().lower()
    if flag in ("0", "false", "off", "no"):
        return False
    max_dff = int(os.environ.get("MLXCEL_FUSED_MOE_MAX_DFF", "8192"))
    return family in FUSED_FAMILIES and width <= max_dff
