"""The MLX MoE payload in-process, on MLX's CPU backend at tiny widths: both expert paths compute
the same token, and both match a plain dequantize-and-multiply reading of the same weights."""

import json
from pathlib import Path

import mlx.core as mx
import pytest

from tests.targets.mlx_moe.decoder.arch import qmm_kernel
from tests.targets.mlx_moe.decoder.config import ConfigError, Quant, load_config
from tests.targets.mlx_moe.decoder.expert_path import PathError, decode_expert_path
from tests.targets.mlx_moe.decoder.model import Decoder, arrays_in
from tests.targets.mlx_moe.decoder.moe import fused_experts, gathered_experts
from tests.targets.mlx_moe.decoder.moe_detail import MoeDetail
from tests.targets.mlx_moe.decoder.weights import QWeight
from tests.targets.mlx_repo import model_configs

TINY = model_configs("tiny")
# float32 on CPU: the two paths differ only in summation order.
TOLERANCE = 1e-4


def config_dir(tmp_path: Path, name: str, **changes: object) -> Path:
    directory = tmp_path / name
    directory.mkdir(parents=True)
    (directory / "config.json").write_text(json.dumps({**TINY[name], **changes}))
    return directory


def build(tmp_path: Path, name: str, fused: bool) -> Decoder:
    model = Decoder.build(load_config(config_dir(tmp_path / str(fused), name)), mx.float32,
                          fused, MoeDetail())
    mx.eval(arrays_in(model))
    return model


def decode_logits(model: Decoder, steps: int = 3) -> list[mx.array]:
    """Logits of a 7-token prefill and `steps` single-token steps after it."""
    cache = model.new_cache(16)
    out = [model(mx.array([5, 9, 2, 7, 1, 8, 3], dtype=mx.int32), cache, 0)]
    for i in range(steps):
        out.append(model(mx.array([11 + i], dtype=mx.int32), cache, 7 + i))
    return out


@pytest.mark.parametrize("name", sorted(TINY))
def test_fused_and_gather_paths_give_the_same_logits(tmp_path: Path, name: str) -> None:
    gather = decode_logits(build(tmp_path, name, fused=False))
    fused = decode_logits(build(tmp_path, name, fused=True))
    assert float(mx.abs(gather[0] - fused[0]).max()) == 0.0  # prefill takes gather either way
    for g, f in zip(gather[1:], fused[1:], strict=True):
        assert float(mx.abs(g).max()) > 0.1  # a real signal, not zeros
        assert mx.allclose(g, f, atol=TOLERANCE, rtol=TOLERANCE).item()


def dense(w: QWeight, expert: int) -> mx.array:
    biases = None if w.biases is None else w.biases[expert]
    return mx.dequantize(w.w[expert], w.scales[expert], biases, group_size=w.quant.group_size,
                         bits=w.quant.bits, mode=w.quant.mode)


@pytest.mark.parametrize("name", ["qwen3-30b-a3b-4bit", "deepseek-v4-flash-4bit",
                                  "inkling-small-nvfp4"])
def test_both_paths_match_dequantized_experts(tmp_path: Path, name: str) -> None:
    block = build(tmp_path, name, fused=False).layers[-1].moe
    x = mx.random.normal((1, block.config.hidden), key=mx.random.key(4))
    indices, weights = block.route(x, mx.array([3], dtype=mx.int32))
    expected = mx.zeros((1, block.config.hidden))
    for slot in range(block.config.top_k):
        e = int(indices[0, slot].item())
        gate, up = x @ dense(block.experts.gate, e).T, x @ dense(block.experts.up, e).T
        out = (gate * mx.sigmoid(gate) * up) @ dense(block.experts.down, e).T
        expected = expected + weights[0, slot] * out
    gathered = mx.sum(gathered_experts(x, indices, block.experts) * weights[..., None], axis=-2)
    fused = fused_experts(x, indices, weights, block.experts)
    assert mx.allclose(gathered, expected, atol=TOLERANCE, rtol=TOLERANCE).item()
    assert mx.allclose(fused, expected, atol=TOLERANCE, rtol=TOLERANCE).item()


def test_weights_follow_the_seed_not_the_path(tmp_path: Path) -> None:
    a = build(tmp_path / "a", "qwen3-30b-a3b-4bit", fused=False).layers[0].moe.experts.down
    b = build(tmp_path / "b", "qwen3-30b-a3b-4bit", fused=True).layers[0].moe.experts.down
    assert mx.array_equal(a.w, b.w).item() and mx.array_equal(a.scales, b.scales).item()
    other = Decoder.build(load_config(config_dir(tmp_path, "qwen3-30b-a3b-4bit", seed=99)),
                          mx.float32, False, MoeDetail()).layers[0].moe.experts.down
    assert not mx.array_equal(a.w, other.w).item()


def test_routers_pick_top_k_distinct_experts(tmp_path: Path) -> None:
    for name in TINY:
        block = build(tmp_path / name, name, fused=False).layers[0].moe
        x = mx.random.normal((5, block.config.hidden), key=mx.random.key(1))
        indices, weights = block.route(x, mx.arange(5, dtype=mx.int32))
        assert indices.shape == weights.shape == (5, block.config.top_k)
        assert all(len(set(row)) == block.config.top_k for row in indices.tolist())
        assert float(mx.min(weights).item()) > 0


@pytest.mark.parametrize(("changes", "says"), [
    ({"model_type": "llama"}, "model_type 'llama' is not one of"),
    ({"moe_intermediate_size": 100}, "moe_intermediate_size 100 is not a multiple of group size"),
    ({"num_experts_per_tok": 99}, "num_experts_per_tok 99 exceeds the 16 experts"),
    ({"hidden_size": "wide"}, "hidden_size must be an integer"),
    ({"expert_quantization": {"mode": "mxfp4", "group_size": 64, "bits": 4}},
     "mxfp4 takes group size 32 and 4 bits, not 64 and 4"),
    ({"quantization": {"mode": "int4", "group_size": 64, "bits": 4}}, "mode 'int4' is not one of"),
])
def test_a_bad_config_is_one_sentence(tmp_path: Path, changes: dict[str, object],
                                      says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        load_config(config_dir(tmp_path, "qwen3-30b-a3b-4bit", **changes))


def test_a_missing_or_broken_config_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is not a directory"):
        load_config(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="config.json does not exist"):
        load_config(tmp_path / "empty")
    (tmp_path / "empty" / "config.json").write_text("{")
    with pytest.raises(ConfigError, match="is not readable JSON"):
        load_config(tmp_path / "empty")


def test_the_fused_switch_reads_mlxcel_values(tmp_path: Path) -> None:
    qwen = load_config(config_dir(tmp_path, "qwen3-30b-a3b-4bit"))
    inkling = load_config(config_dir(tmp_path, "inkling-small-mlx-4bit"))
    assert decode_expert_path(qwen, {}) == "fused"
    for off in ("0", "false", "OFF", "no"):
        assert decode_expert_path(qwen, {"MLXCEL_FUSED_MOE": off}) == "gather_qmm"
    assert decode_expert_path(qwen, {"MLXCEL_FUSED_MOE_MAX_DFF": "32"}) == "gather_qmm"
    assert decode_expert_path(inkling, {}) == "gather_qmm"  # never reaches the fused path
    with pytest.raises(PathError, match="not an integer"):
        decode_expert_path(qwen, {"MLXCEL_FUSED_MOE_MAX_DFF": "big"})


AFFINE = Quant("affine", 64, 4)
MXFP4 = Quant("mxfp4", 32, 4)


@pytest.mark.parametrize(("major", "m", "batch", "n", "k", "quant", "kernel"), [
    (9, 512, 1, 4096, 2048, AFFINE, "qmm_sm80"),   # H200 prefill: group 64 < K rules out sm90
    (9, 1, 1, 6144, 2048, AFFINE, "qmv"),          # the fused path's gate at Qwen3 widths
    (9, 1, 1, 4096, 12288, MXFP4, "qmv"),          # fp_qmv needs sm_100 or newer
    (12, 1, 1, 4096, 12288, MXFP4, "fp_qmv"),      # GB10 (sm_121)
    (9, 512, 1, 4096, 2048, Quant("affine", 2048, 4), "qmm_sm90"),
    (7, 512, 1, 4096, 2048, AFFINE, "qmm_naive"),
])
def test_first_qmm_kernel_follows_mlx_dispatch(major: int, m: int, batch: int, n: int, k: int,
                                               quant: Quant, kernel: str) -> None:
    assert qmm_kernel(major, m, batch, n, k, quant, mx.bfloat16) == kernel
