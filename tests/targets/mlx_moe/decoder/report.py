"""The lines mlxcel-bench-decode prints, in mlxcel's format: memory, load, long prompt, phase
marks and the closing `[Profile Results]` block."""

from __future__ import annotations

import os
import sys
import time

import mlx.core as mx

from .generate import PassResult

PHASE_MARKS_ENV = "MLXCEL_BENCH_PHASE_MARKS"
GB = 1e9


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def gb(n: int) -> str:
    return f"{n / GB:.2f}"


class Peaks:
    """MLX's peak counter serves both the per-phase peaks and the whole run's peak."""

    def __init__(self) -> None:
        self.overall = 0

    def read(self) -> int:
        self.overall = max(self.overall, mx.get_peak_memory())
        return self.overall

    def memory_line(self, when: str) -> str:
        """`[Memory] {when}: ...`; the phase peak starts again after it."""
        phase = mx.get_peak_memory()
        self.read()
        mx.reset_peak_memory()
        active, cached = mx.get_active_memory(), mx.get_cache_memory()
        return (f"[Memory] {when}: active {gb(active)} GB, cache {gb(cached)} GB, active+cache "
                f"{gb(active + cached)} GB, phase peak {gb(phase)} GB")


def long_prompt_line(target: int, used: int, max_context: int | None, reserved: int) -> str:
    context = "None" if max_context is None else f"Some({max_context})"
    return (f"[long-prompt] target={target} tokens -> using {used} tokens "
            f"(max_context={context}, reserved {reserved} for generation)")


def phase_mark(name: str) -> None:
    if os.environ.get(PHASE_MARKS_ENV) != "1":
        return
    boottime = (str(time.clock_gettime_ns(time.CLOCK_BOOTTIME))
                if hasattr(time, "CLOCK_BOOTTIME") else "na")
    say(f"[phase] {name} monotonic_ns={time.clock_gettime_ns(time.CLOCK_MONOTONIC)} "
        f"boottime_ns={boottime}")


def profile_results(result: PassResult, decode_path: str, peak: int) -> str:
    prefill_ms = result.prefill_s * 1e3
    decode_ms = result.decode_s * 1e3
    generated = len(result.generated)
    bold, plain = ("", "") if os.environ.get("NO_COLOR") else ("\x1b[1m", "\x1b[0m")
    return "\n".join([
        f"{bold}[Profile Results]{plain}",
        f"  Prompt tokens:    {result.prompt_tokens}",
        f"  Generated tokens: {generated}",
        f"  Prefill:          {prefill_ms:.2f} ms "
        f"({_rate(result.prompt_tokens, result.prefill_s):.2f} tok/s)",
        f"  Decode:           {decode_ms:.2f} ms ({_rate(generated, result.decode_s):.2f} tok/s)",
        f"  Decode path:      {decode_path}",
        f"  MLX peak memory:  {gb(peak)} GB",
    ])


def _rate(tokens: int, seconds: float) -> float:
    return tokens / seconds if seconds > 0 else 0.0
