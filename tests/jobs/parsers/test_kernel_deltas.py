"""The H200 check's summary: per-token launches and time from two cupti-kernsum tables, and the
check of the routed-expert kernel each family and path should launch."""

from pathlib import Path

from tests.targets.kernel_deltas import report, short
from workers.tools.cupti_kernsum import summarise, write_csv

QMM = "void mlx::core::cu::qmm_sm80_kernel<__nv_bfloat16, 4, 64, true>(const uint32_t *, int)"
QMV = "void mlx::core::cu::qmv_kernel<__nv_bfloat16, 8, 64, true, false>(const float *)"
ARANGE = "void mlx::core::cu::arange<float>(float *, float, float, int)"


def write_run(folder: Path, run: str, per_token: dict[str, tuple[int, int]],
              fixed: dict[str, tuple[int, int]]) -> None:
    """Tables at 64 and 32 tokens: `fixed` launches (load, prefill) plus `per_token` ones."""
    for tokens in (64, 32):
        durations = {name: [ns] * count for name, (count, ns) in fixed.items()}
        for name, (count, ns) in per_token.items():
            durations.setdefault(name, []).extend([ns] * count * tokens)
        write_csv(folder / f"{run}.kern{tokens}.csv", summarise(durations))
    (folder / f"{run}.bench.txt").write_text(
        "  Generated tokens: 128\n  Decode:           256.00 ms (500.00 tok/s)\n")


def test_gather_run_shows_its_expert_kernel_per_token(tmp_path: Path) -> None:
    write_run(tmp_path, "qwen3-30b-a3b-4bit.fused0", {QMM: (12, 9000), ARANGE: (12, 1000)},
              {QMM: (48, 50000)})
    lines = report(tmp_path, "qwen3-30b-a3b-4bit.fused0", 64, 32)
    assert "  unprofiled decode 500.00 tok/s = 2000.0 us/token" in lines
    assert "  kernels 120.0 us/token; GPU idle 1880.0 us/token" in lines
    assert "         12.00    108.00  qmm_sm80_kernel" in lines  # prefill's 48 launches cancel
    assert lines[-1].startswith("  check OK: wanted qmm_sm80")


def test_fused_run_must_not_launch_a_gather_kernel_per_token(tmp_path: Path) -> None:
    write_run(tmp_path, "qwen3-30b-a3b-4bit.fused1", {QMV: (12, 4000), QMM: (12, 9000)}, {})
    assert report(tmp_path, "qwen3-30b-a3b-4bit.fused1", 64, 32)[-1].startswith(
        "  check UNEXPECTED")
    write_run(tmp_path, "qwen3-30b-a3b-4bit.fused1", {QMV: (12, 4000)}, {QMM: (48, 50000)})
    assert report(tmp_path, "qwen3-30b-a3b-4bit.fused1", 64, 32)[-1].startswith("  check OK")


def test_short_names() -> None:
    assert short(QMM) == "qmm_sm80_kernel" and short("copy_g_nd") == "copy_g_nd"
