"""Seeded random weights at the config's widths, stored the way MLX's quantized kernels read them.

A quantized matrix is drawn directly in its stored form: random packed codes, and per-group
scales (and biases) picked from a small normal sample that `mx.quantize` quantized, so value
ranges are what MLX produces for a normal matrix of that width. Drawing codes instead of
quantizing a full float matrix keeps a 256-expert layer's load at seconds rather than minutes.
Every tensor has its own key derived from (seed, name), so the weights do not depend on the
order in which they are built, nor on which expert path the build takes."""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import mlx.core as mx

from .config import Quant
from .ops import ops

# Rows of the normal sample whose quantization gives the scale (and bias) pool.
CALIBRATION_ROWS = 64
# A stack of experts larger than this many packed words is drawn in slices of experts: one
# launch over a 256-expert stack at DeepSeek-V4 widths (2^28 words) failed in MLX's CUDA
# backend on an H200 ("cudaGraphAddKernelNode ... invalid argument").
CHUNK_WORDS = 1 << 25


@dataclass(frozen=True)
class QWeight:
    """A quantized matrix (or a stack of them, one per expert) as MLX's kernels take it."""

    w: mx.array
    scales: mx.array
    biases: mx.array | None
    quant: Quant


def key(seed: int, name: str) -> mx.array:
    return ops.random.key(zlib.crc32(f"{seed}:{name}".encode()))


def quantized(seed: int, name: str, shape: tuple[int, ...], quant: Quant,
              dtype: mx.Dtype) -> QWeight:
    """`shape` is (..., rows, cols): rows outputs, each reading cols inputs (MLX's transpose
    layout); entries have standard deviation 1/sqrt(cols)."""
    *lead, rows, cols = shape
    words = math.prod(shape) * quant.bits // 32
    if lead and words > CHUNK_WORDS and lead[0] > 1:
        step = max(1, lead[0] * CHUNK_WORDS // words)
        parts = [quantized(seed, f"{name}[{i}:]", (min(step, lead[0] - i), *lead[1:], rows,
                                                    cols), quant, dtype)
                 for i in range(0, lead[0], step)]
        for part in parts:
            mx.eval(part.w, part.scales, *([part.biases] if part.biases is not None else []))
        return QWeight(ops.concatenate([p.w for p in parts]),
                       ops.concatenate([p.scales for p in parts]),
                       ops.concatenate([p.biases for p in parts])  # type: ignore[misc]
                       if quant.mode == "affine" else None, quant)
    k_sample, k_codes, k_pick = ops.random.split(key(seed, name), 3)
    sample = ops.multiply(ops.random.normal((CALIBRATION_ROWS, cols), dtype=dtype, key=k_sample),
                          1.0 / math.sqrt(cols))
    pool = ops.quantize(sample, group_size=quant.group_size, bits=quant.bits, mode=quant.mode)
    codes = random_words(k_codes, (*lead, rows, cols * quant.bits // 32))
    groups = pool[1].shape[-1]
    pick = ops.remainder(random_words(k_pick, (*lead, rows, groups)), CALIBRATION_ROWS * groups)
    scales = ops.take(pool[1], pick)
    biases = ops.take(pool[2], pick) if quant.mode == "affine" else None
    return QWeight(codes, scales, biases, quant)


def maker(seed: int, prefix: str, quant: Quant, dtype: mx.Dtype,
          lead: tuple[int, ...] = ()) -> Callable[[str, int, int], QWeight]:
    """`make(part, rows, cols)`: the quantized matrix (or stack of `lead` matrices) named
    `prefix.part`."""
    def make(part: str, rows: int, cols: int) -> QWeight:
        return quantized(seed, f"{prefix}.{part}", (*lead, rows, cols), quant, dtype)
    return make


def random_words(k: mx.array, shape: tuple[int, ...]) -> mx.array:
    """Uniform random uint32 words. `random.split` hands out raw generator output, two words a
    key, with no float conversion: several times faster than `randint` and no larger than its
    result."""
    count = math.prod(shape)
    words = ops.reshape(ops.random.split(k, (count + 1) // 2), (-1,))
    if count % 2:
        words = ops.slice(words, ops.array([0]), (0,), (count,))
    return ops.reshape(words, shape)


def normal(seed: int, name: str, shape: tuple[int, ...], dtype: mx.Dtype,
           std: float) -> mx.array:
    return ops.multiply(ops.random.normal(shape, dtype=dtype, key=key(seed, name)), std)


def distinct_choices(seed: int, name: str, rows: int, choices: int, k: int) -> mx.array:
    """For each row, k distinct integers below `choices` (a hash-routing table)."""
    noise = ops.random.uniform(shape=(rows, choices), key=key(seed, name))
    return ops.astype(ops.slice(ops.argsort(noise, axis=-1), ops.array([0, 0]), (0, 1),
                                (rows, k)), mx.int32)
