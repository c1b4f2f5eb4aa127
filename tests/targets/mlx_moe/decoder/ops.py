"""The one namespace the decoder calls MLX through.

Normally `ops` is `mlx.core` itself. When a profiler stand-in names a kernel log
(STANDIN_KERNEL_LOG, the contract in benchfleet's docs/kernel-log.md), `ops` is a proxy that
runs every call to completion and appends one JSON line naming the MLX primitive that produced
its result and how long evaluating it took. That is why the model code calls functions
(`ops.multiply(a, b)`) and never array operators (`a * b`): an operator would run inside the
next call's evaluation and be timed under the wrong name."""

from __future__ import annotations

import json
import os
import re
import tempfile
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mlx.core as mx

KERNEL_LOG_ENV = "STANDIN_KERNEL_LOG"
_LABEL = re.compile(r'\[label ="([^"]*)"')


def primitives(*outputs: mx.array) -> list[str]:
    """The primitives MLX would run to evaluate `outputs`, in its export order, read from
    MLX's own DOT export (the last one produced the result)."""
    with tempfile.TemporaryDirectory(prefix="mlx-moe-dot-") as tmp:
        path = Path(tmp) / "graph.dot"
        mx.export_to_dot(str(path), *outputs)
        return _LABEL.findall(path.read_text())


class KernelLog:
    """Appends one line per evaluated call, each with a single write (safe across processes)."""

    def __init__(self, path: str) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._names: dict[tuple[object, ...], list[str]] = {}

    def run(self, call: str, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> None:
        arrays = _arrays(out)
        if not arrays:
            return
        key = (call, *(_signature(a) for a in (*args, *kwargs.values(), *arrays)),
               *sorted(kwargs))
        if key not in self._names:
            self._names[key] = primitives(*arrays)
        names = self._names[key]
        if not names:  # the result was already evaluated: nothing ran
            return
        start = time.perf_counter_ns()
        mx.eval(*arrays)
        ns = time.perf_counter_ns() - start
        line = {"name": names[-1], "ns": ns, "start_ns": start, "pid": os.getpid(),
                "call": call, "ops": names, "device": _device()}
        os.write(self._fd, (json.dumps(line) + "\n").encode())


class TimedOps:
    """Looks like `mlx.core` (and its submodules); every call is evaluated and logged."""

    def __init__(self, module: types.ModuleType, log: KernelLog, prefix: str = "") -> None:
        self._module = module
        self._log = log
        self._prefix = prefix

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._module, name)
        if isinstance(attr, types.ModuleType):
            return TimedOps(attr, self._log, f"{self._prefix}{name}.")
        if not callable(attr) or isinstance(attr, type) or name in ("eval", "async_eval"):
            return attr
        return self._timed(f"{self._prefix}{name}", attr)

    def _timed(self, call: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            out = fn(*args, **kwargs)
            self._log.run(call, args, kwargs, out)
            return out
        return timed


def _arrays(out: Any) -> list[mx.array]:
    if isinstance(out, mx.array):
        return [out]
    if isinstance(out, tuple | list):
        return [a for a in out if isinstance(a, mx.array)]
    return []


def _signature(value: Any) -> object:
    if isinstance(value, mx.array):
        return (tuple(value.shape), str(value.dtype))
    if isinstance(value, tuple | list):
        return tuple(_signature(v) for v in value)
    return type(value).__name__


def _device() -> str:
    return "gpu" if mx.default_device() == mx.gpu else "cpu"


def _make_ops() -> Any:
    path = os.environ.get(KERNEL_LOG_ENV, "")
    return TimedOps(mx, KernelLog(path)) if path else mx


ops: Any = _make_ops()
