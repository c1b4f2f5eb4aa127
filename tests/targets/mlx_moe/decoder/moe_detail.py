"""MLXCEL_PROFILE_QWEN3_MOE_DETAIL: per MoE call, how long the router, the experts and the
combine took, each evaluated to completion before the next starts. The synchronisation makes
these figures attribution, never throughput."""

from __future__ import annotations

import sys
import time

import mlx.core as mx

DETAIL_ENV = "MLXCEL_PROFILE_QWEN3_MOE_DETAIL"


class MoeDetail:
    """The silent default: no synchronisation, nothing printed."""

    def start(self, *inputs: mx.array) -> None:
        pass

    def lap(self, phase: str, *outputs: mx.array) -> None:
        pass

    def skip(self, phase: str) -> None:
        pass

    def report(self, path: str, tokens: int) -> None:
        pass


class SyncedMoeDetail(MoeDetail):
    """Prints `[QWEN3_MOE_SPARSE] path=... tokens=... gate=...ms expert=...ms combine=...ms`."""

    def __init__(self) -> None:
        self._ms: dict[str, float] = {}
        self._since = 0.0

    def start(self, *inputs: mx.array) -> None:
        mx.eval(*inputs)  # what came before the block is not the router's time
        self._ms = {}
        self._since = time.perf_counter()

    def lap(self, phase: str, *outputs: mx.array) -> None:
        mx.eval(*outputs)
        now = time.perf_counter()
        self._ms[phase] = (now - self._since) * 1e3
        self._since = now

    def skip(self, phase: str) -> None:
        self._ms[phase] = 0.0

    def report(self, path: str, tokens: int) -> None:
        ms = self._ms
        print(f"[QWEN3_MOE_SPARSE] path={path} tokens={tokens} gate={ms['gate']:.2f}ms "
              f"expert={ms['expert']:.2f}ms combine={ms['combine']:.2f}ms", file=sys.stderr,
              flush=True)
