"""A tiny MoE decoder: attention, a top-k router, routed experts, and their combine."""

import json
import os
from pathlib import Path

import numpy as np

FUSED_FAMILIES = {"qwen3_moe"}  # families whose decode reaches the fused kernel


class Model:
    def __init__(self, path: Path, dtype: str) -> None:
        config = json.loads((path / "config.json").read_text())
        self.config = config
        self.family = config.get("family", "qwen3_moe")
        self.layers = int(config["layers"])
        self.hidden = int(config["hidden"])
        self.experts = int(config["experts"])
        self.top_k = int(config["top_k"])
        self.width = int(config["expert_width"])
        self.vocab = int(config.get("vocab", 512))
        self.max_context = int(config.get("max_context", 4096))
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
        self.head = draw(self.hidden, self.vocab)
        self.profile = os.environ.get("MLXCEL_PROFILE_QWEN3_MOE_DETAIL") == "1"
        self.fused = fused_enabled(self.family, self.width)

    def new_cache(self) -> list[tuple[list[np.ndarray], list[np.ndarray]]]:
        return [([], []) for _ in range(self.layers)]

    def forward(self, tokens: np.ndarray, cache: list) -> np.ndarray:
        x = self.embed[tokens]
        for layer in range(self.layers):
            x = x + self.attention(layer, x, cache[layer])
            x = x + self.moe(layer, x)
        return x[-1] @ self.head

    def attention(self, layer: int, x: np.ndarray, cache: tuple[list, list]) -> np.ndarray:
        q, k, v = np.split(x @ self.wqkv[layer], 3, axis=-1)
        cache[0].append(k)
        cache[1].append(v)
        keys, values = np.concatenate(cache[0]), np.concatenate(cache[1])
        scores = q @ keys.T / np.sqrt(self.hidden)
        past = keys.shape[0] - q.shape[0]
        mask = np.arange(keys.shape[0])[None, :] > (past + np.arange(q.shape[0]))[:, None]
        scores = np.where(mask, -np.inf, scores)
        weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
        weights /= weights.sum(axis=-1, keepdims=True)
        return (weights @ values) @ self.wo[layer]

    def moe(self, layer: int, x: np.ndarray) -> np.ndarray:
        logits = x @ self.router[layer]
        chosen = np.argsort(-logits, axis=-1)[:, : self.top_k]
        gates = np.take_along_axis(logits, chosen, axis=-1)
        gates = np.exp(gates - gates.max(axis=-1, keepdims=True))
        gates /= gates.sum(axis=-1, keepdims=True)
        path = "fused" if self.fused and x.shape[0] == 1 else "gather_qmm"
        if self.profile:
            print(f"path={path} tokens={x.shape[0]}", file=__import__("sys").stderr)
        if path == "fused":
            return self.fused_experts(layer, x, chosen[0], gates[0])
        return self.gather_experts(layer, x, chosen, gates)

    def gather_experts(self, layer: int, x: np.ndarray, chosen: np.ndarray,
                       gates: np.ndarray) -> np.ndarray:
        # One matmul pair per (token, expert): the M = 1 gather that decode pays for.
        out = np.zeros_like(x)
        for t in range(x.shape[0]):
            for slot in range(self.top_k):
                e = chosen[t, slot]
                h = np.maximum(x[t] @ self.w_up[layer][e], 0)
                out[t] += gates[t, slot] * (h @ self.w_down[layer][e])
        return out

    def fused_experts(self, layer: int, x: np.ndarray, chosen: np.ndarray,
                      gates: np.ndarray) -> np.ndarray:
        h = np.maximum(np.einsum("h,khw->kw", x[0], self.w_up[layer][chosen]), 0)
        y = np.einsum("kw,kwh->kh", h, self.w_down[layer][chosen])
        return (gates @ y)[None, :]


def fused_enabled(family: str, width: int) -> bool:
    flag = os.environ.get("MLXCEL_FUSED_MOE", "1").strip().lower()
    if flag in ("0", "false", "off", "no"):
        return False
    max_dff = int(os.environ.get("MLXCEL_FUSED_MOE_MAX_DFF", "8192"))
    return family in FUSED_FAMILIES and width <= max_dff
