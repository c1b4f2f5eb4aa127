"""A model directory's config.json, read into the widths and choices the decoder builds from.

The weights are not in the directory: they are drawn at load from the config's seed, so a
directory is one small file and every host that has it builds the same model."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

# The three routers mlxcel's MoE question is about (see docs/gpu-payload.md).
FAMILIES = ("qwen3_moe", "deepseek_v4", "inkling")
# MLX 0.32's quantization modes: the microscaling ones fix their group size and bits.
FIXED_MODES = {"mxfp4": (32, 4), "nvfp4": (16, 4), "mxfp8": (32, 8)}
AFFINE_GROUPS = (32, 64, 128)
AFFINE_BITS = (2, 3, 4, 5, 6, 8)
QUANT_MODES = ("affine", *FIXED_MODES)
DTYPES = ("bfloat16", "float16", "float32")


class ConfigError(Exception):
    """config.json is missing, unreadable, or describes a model this decoder cannot build."""


@dataclass(frozen=True)
class Quant:
    mode: str
    group_size: int
    bits: int


@dataclass(frozen=True)
class ModelConfig:
    family: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    experts: int
    top_k: int
    expert_width: int
    shared_experts: int
    hash_layers: int
    norm_topk_prob: bool
    routed_scaling: float
    rope_theta: float
    rms_eps: float
    max_context: int | None
    eos_token_id: int
    dtype: str
    seed: int
    tie_embeddings: bool
    quant: Quant
    expert_quant: Quant


def load_config(model_dir: Path) -> ModelConfig:
    path = model_dir / "config.json"
    if not model_dir.is_dir():
        raise ConfigError(f"{model_dir} is not a directory")
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"{path} does not exist") from None
    except (OSError, ValueError) as e:
        raise ConfigError(f"{path} is not readable JSON ({e})") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path} holds {type(raw).__name__}, not a JSON object")
    try:
        config = _from_raw(raw)
    except (KeyError, TypeError, ValueError) as e:
        raise ConfigError(f"{path}: {_describe(e)}") from None
    _check(config, path)
    return config


def _from_raw(raw: dict[str, object]) -> ModelConfig:
    def num(key: str, default: object = None) -> int:
        value = raw.get(key, default)
        if value is None:
            raise KeyError(key)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{key} must be an integer, not {value!r}")
        return value

    def real(key: str, default: float) -> float:
        value = raw.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"{key} must be a number, not {value!r}")
        return float(value)

    quant = _quant(raw.get("quantization"), "quantization")
    expert_raw = raw.get("expert_quantization")
    hidden = num("hidden_size")
    heads = num("num_attention_heads")
    max_context = raw.get("max_position_embeddings")
    return ModelConfig(
        family=str(raw["model_type"]),
        hidden=hidden,
        layers=num("num_hidden_layers"),
        heads=heads,
        kv_heads=num("num_key_value_heads", heads),
        head_dim=num("head_dim", hidden // heads),
        vocab=num("vocab_size"),
        experts=num("num_experts", raw.get("n_routed_experts")),
        top_k=num("num_experts_per_tok"),
        expert_width=num("moe_intermediate_size"),
        shared_experts=num("n_shared_experts", 0),
        hash_layers=num("num_hash_layers", 0),
        norm_topk_prob=bool(raw.get("norm_topk_prob", True)),
        routed_scaling=real("routed_scaling_factor", 1.0),
        rope_theta=real("rope_theta", 1_000_000.0),
        rms_eps=real("rms_norm_eps", 1e-6),
        max_context=None if max_context is None else num("max_position_embeddings"),
        eos_token_id=num("eos_token_id", 0),
        dtype=str(raw.get("torch_dtype", "bfloat16")),
        seed=num("seed", 0),
        tie_embeddings=bool(raw.get("tie_word_embeddings", False)),
        quant=quant,
        expert_quant=quant if expert_raw is None else _quant(expert_raw, "expert_quantization"),
    )


def _quant(raw: object, key: str) -> Quant:
    if not isinstance(raw, dict):
        raise ValueError(f"{key} must be an object like {{\"group_size\": 64, \"bits\": 4}}")
    return Quant(mode=str(raw.get("mode", "affine")), group_size=int(raw["group_size"]),
                 bits=int(raw["bits"]))


def _check(c: ModelConfig, path: Path) -> None:
    problems = []
    if c.family not in FAMILIES:
        problems.append(f"model_type {c.family!r} is not one of {', '.join(FAMILIES)}")
    if c.dtype not in DTYPES:
        problems.append(f"torch_dtype {c.dtype!r} is not one of {', '.join(DTYPES)}")
    for name in ("hidden", "layers", "heads", "kv_heads", "head_dim", "vocab", "experts",
                 "top_k", "expert_width"):
        if getattr(c, name) <= 0:
            problems.append(f"{name} must be positive")
    if c.top_k > c.experts:
        problems.append(f"num_experts_per_tok {c.top_k} exceeds the {c.experts} experts")
    if c.heads % max(c.kv_heads, 1):
        problems.append("num_attention_heads must be a multiple of num_key_value_heads")
    if c.hash_layers > c.layers:
        problems.append("num_hash_layers exceeds num_hidden_layers")
    for quant, width, what in ((c.quant, c.hidden, "hidden_size"),
                               (c.expert_quant, c.expert_width, "moe_intermediate_size")):
        problems += _quant_problems(quant)
        if quant.group_size <= 0 or width % quant.group_size:
            problems.append(f"{what} {width} is not a multiple of group size {quant.group_size}")
    if problems:
        raise ConfigError(f"{path}: " + "; ".join(problems))


def _quant_problems(q: Quant) -> list[str]:
    if q.mode in FIXED_MODES:
        group, bits = FIXED_MODES[q.mode]
        if (q.group_size, q.bits) != (group, bits):
            return [f"{q.mode} takes group size {group} and {bits} bits, not "
                    f"{q.group_size} and {q.bits}"]
        return []
    if q.mode != "affine":
        return [f"quantization mode {q.mode!r} is not one of {', '.join(QUANT_MODES)}"]
    if q.group_size not in AFFINE_GROUPS or q.bits not in AFFINE_BITS:
        return [f"affine quantization takes group size {AFFINE_GROUPS} and bits {AFFINE_BITS}, "
                f"not {q.group_size} and {q.bits}"]
    return []


def _describe(e: Exception) -> str:
    if isinstance(e, KeyError):
        return f"required key {e.args[0]!r} is missing"
    return str(e)


def weight_bytes(c: ModelConfig) -> int:
    """The size of the weights as stored: what a host needs before the KV cache and scratch."""
    def packed(rows: int, cols: int, q: Quant) -> float:
        per_group = 2 * 2 if q.mode == "affine" else 1  # affine: bf16 scale + bias; fp: 1 byte
        return rows * (cols * q.bits / 8 + cols / q.group_size * per_group)

    h, w = c.hidden, c.expert_width
    attention = packed((c.heads + 2 * c.kv_heads) * c.head_dim, h, c.quant)
    attention += packed(h, c.heads * c.head_dim, c.quant)
    experts = c.experts * (2 * packed(w, h, c.expert_quant) + packed(h, w, c.expert_quant))
    shared = 3 * packed(c.shared_experts * w, h, c.quant) if c.shared_experts else 0.0
    router = c.experts * h * 2
    per_layer = attention + experts + shared + router
    tables = packed(c.vocab, h, c.quant) * (1 if c.tie_embeddings else 2)
    return int(per_layer * c.layers + tables)
