"""A tiny MoE decoder: attention, a top-k router, routed experts, and their combine."""

import json
import os
import sys
from pathlib import Path

import kernels as k
import numpy as np

FUSED_FAMILIES = {"qwen3_moe"}  # families whose decode reaches the fused kernel


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
        self.moe_path = None  # set to "batched" by the mlx-vlm stand-in

    def new_cache(self) -> list[tuple[list[np.ndarray], list[np.ndarray]]]:
        return [([], []) for _ in range(self.layers)]

    def forward(self, tokens: np.ndarray, cache: list) -> np.ndarray:
        with k.launch(k.TAKE):
            x = self.embed[tokens]
        for layer in range(self.layers):
            x = x + self.attention(layer, x, cache[layer])
            x = x + self.moe(layer, x)
        with k.launch(k.QMV):
            return x[-1] @ self.head

    def attention(self, layer: int, x: np.ndarray, cache: tuple[list, list]) -> np.ndarray:
        with k.launch(k.QMV):
            q, key, value = np.split(x @ self.wqkv[layer], 3, axis=-1)
        with k.launch(k.SDPA):
            cache[0].append(key)
            cache[1].append(value)
            keys, values = np.concatenate(cache[0]), np.concatenate(cache[1])
            scores = q @ keys.T / np.sqrt(self.hidden)
            past = keys.shape[0] - q.shape[0]
            mask = np.arange(keys.shape[0])[None, :] > (past + np.arange(q.shape[0]))[:, None]
            scores = np.where(mask, -np.inf, scores)
            weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
            weights /= weights.sum(axis=-1, keepdims=True)
            attended = weights @ values
        with k.launch(k.QMV):
            return attended @ self.wo[layer]

    def moe(self, layer: int, x: np.ndarray) -> np.ndarray:
        with k.launch(k.QMV):
            logits = x @ self.router[layer]
        with k.launch(k.ARGPARTITION):
            chosen = np.argpartition(-logits, self.top_k - 1, axis=-1)[:, : self.top_k]
        with k.launch(k.SOFTMAX):
            gates = np.take_along_axis(logits, chosen, axis=-1)
            gates = np.exp(gates - gates.max(axis=-1, keepdims=True))
            gates /= gates.sum(axis=-1, keepdims=True)
        if self.moe_path == "batched":
            y = self.batched_experts(layer, x, chosen)
        elif self.fused and x.shape[0] == 1:
            self._say("fused", x)
            y = self.fused_experts(layer, x, chosen)
        elif x.shape[0] > 1:
            self._say("gather_qmm", x)  # prefill: gather_qmm at M > 1 takes the batched qmm
            y = self.batched_experts(layer, x, chosen, k.QMM_SM80)
        else:
            self._say("gather_qmm", x)
            y = self.gather_experts(layer, x, chosen)
        with k.launch(k.COMBINE):
            return np.einsum("tk,tkh->th", gates, y)

    def _say(self, path: str, x: np.ndarray) -> None:
        if self.profile:
            print(f"path={path} tokens={x.shape[0]}", file=sys.stderr)

    def gather_experts(self, layer: int, x: np.ndarray, chosen: np.ndarray) -> np.ndarray:
        """gather_qmm at M = 1: index lists are materialised and every (token, expert) pair
        gathers its expert's weights and runs its own matmul pair."""
        with k.launch(k.ARANGE):
            rows = np.repeat(np.arange(x.shape[0]), self.top_k)
        with k.launch(k.COPY_G_ND):
            inputs = x[rows]
            flat = chosen.reshape(-1)
        out = np.empty((len(flat), self.hidden), dtype=x.dtype)
        for i, e in enumerate(flat):
            with k.launch(k.GATHER_QMV):
                h = np.maximum(inputs[i] @ np.take(self.w_up[layer], e, axis=0), 0)
            with k.launch(k.GATHER_QMV):
                out[i] = h @ np.take(self.w_down[layer], e, axis=0)
        return out.reshape(x.shape[0], self.top_k, self.hidden)

    def fused_experts(self, layer: int, x: np.ndarray, chosen: np.ndarray) -> np.ndarray:
        """The fused decode kernel: one launch reads each chosen expert's weights in place."""
        with k.launch(k.FUSED_MOE):
            up, down = self.w_up[layer], self.w_down[layer]
            y = [np.maximum(x[0] @ up[e], 0) @ down[e] for e in chosen[0]]
            return np.stack(y)[None, :, :]

    def batched_experts(self, layer: int, x: np.ndarray, chosen: np.ndarray,
                        kernel: tuple[str, str] = k.GATHER_QMV) -> np.ndarray:
        """Tokens sorted by expert, one batched matmul pair per expert (mlx-vlm's path, and
        gather_qmm at M > 1); at one token, the chosen experts' weights are read in place."""
        up, down = self.w_up[layer], self.w_down[layer]
        if x.shape[0] == 1:
            with k.launch(kernel):
                y = [np.maximum(x[0] @ up[e], 0) @ down[e] for e in chosen[0]]
            return np.stack(y)[None]
        out = np.empty((x.shape[0], self.top_k, self.hidden), dtype=x.dtype)
        for e in np.unique(chosen):
            t, slot = np.nonzero(chosen == e)
            with k.launch(kernel):
                out[t, slot] = np.maximum(x[t] @ up[e], 0) @ down[e]
        return out


def fused_enabled(family: str, width: int) -> bool:
    flag = os.environ.get("MLXCEL_FUSED_MOE", "1").strip().lower()
    if flag in ("0", "false", "off", "no"):
        return False
    max_dff = int(os.environ.get("MLXCEL_FUSED_MOE_MAX_DFF", "8192"))
    return family in FUSED_FAMILIES and width <= max_dff
