"""The MoE decode-gap preset end to end on the stand-in, with the shipped mlxcel recipes.

Two workers stand for `cuda` and `metal`; the tool stand-ins (tests/tools: nsys, xcrun, cargo,
which know only docs/kernel-log.md) come first on their PATH, so the catalogue's recipes run
unchanged. The record must pass `benchfleet check`
and hold every section the question asks for, each recomputable from the artifacts.
"""

import csv
import io
import json
import socket
import subprocess
from pathlib import Path

import pytest
import yaml

from jobs.record.model import Record
from tests.support.fleet import cli, submit, wait
from tests.support.moe_lab import at_ci_size
from workers.shared.settings import Settings
from workers.shared.state import Store
from workers.shared.stores.local import LocalStore

pytestmark = pytest.mark.integration
FAMILIES = ["deepseek-v4-flash-4bit", "inkling-small-mlx-4bit", "inkling-small-nvfp4"]
CONTROL = "qwen3-30b-a3b-4bit"
PIN = "81ba1c6a3f0e5d2b7c4a9e8f1d6b3a5c7e9f0d2b"


def test_preset_answers_the_question_and_passes_check(lab: tuple[Settings, Path, Path]) -> None:
    settings, repo, root = lab
    sweep_path = root / "moe-decode-gap.yaml"
    made = cli(settings, "init", "moe-decode-gap", "--commit", "main", "--repo", str(repo),
               "-o", str(sweep_path))
    assert made.returncode == 0, made.stderr
    at_ci_size(sweep_path)
    sweep_id = submit(settings, sweep_path)
    store = Store.connect(settings.redis_url)
    wait(store, sweep_id, deadline_s=900)
    failed = {k: s.reason for k, s in store.states(sweep_id).items() if s.status != "done"}
    assert failed == {}

    out = root / "record"
    recorded = cli(settings, "record", sweep_id, "-o", str(out))
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    assert "benchfleet check: passes" in recorded.stdout
    json_path = out / f"{sweep_id}.json"
    assert cli(settings, "check", str(json_path)).returncode == 0
    record = Record.model_validate_json(json_path.read_text())
    markdown = (out / f"{sweep_id}.md").read_text()

    # Metadata: host, chip, OS, MLX pin, tree commit, date, n, build command and time, env.
    assert record.meta.mlx_pins and set(record.meta.mlx_pins.values()) == {PIN}
    assert "MLX pin at" in markdown and f"`{PIN[:8]}`" in markdown
    assert sorted(b.backend for b in record.meta.builds) == ["cuda", "metal"]
    cuda_build = next(b for b in record.meta.builds if b.backend == "cuda")
    assert cuda_build.command[0] == ["make", "release-cuda"] and cuda_build.wall_s
    assert record.meta.env["fused-off"]["MLXCEL_FUSED_MOE"] == "0"
    assert record.n == 3 and record.meta.date and record.hosts

    # Throughput rows: every arm n = 3 against the mlx-vlm baseline on both backends.
    assert len(record.groups) == 8
    for g in record.groups:
        assert all(r.n == 3 for r in g.rows)
        assert g.row("mlxcel").decode_vs_baseline is not None  # type: ignore[union-attr]
        assert g.profile is not None and g.profile.attribution.phase("unclassified")
    control = [g for g in record.groups if g.model == CONTROL]
    assert all(g.row("fused-off") for g in control)

    # Profiles: the control prints [QWEN3_MOE_SPARSE] lines and decodes through the fused
    # kernel; the families have no such hook and show the gather in their kernels.
    for g in record.groups:
        p = g.profile
        assert p is not None
        gather, fused = p.attribution.phase("expert gather"), p.attribution.phase("fused moe")
        assert gather is not None and fused is not None
        if g.model == CONTROL:
            assert p.paths is not None and p.paths.decode_fused > 0 and not p.paths.decode_gather
            custom = p.attribution.phase("custom kernels")  # Metal names no kernel, only ops
            assert (fused if g.backend == "cuda" else custom).launches_per_token > 0  # type: ignore[union-attr]
        else:
            assert p.paths is None and p.attribution.family in ("deepseek_v4", "inkling")
            assert gather.launches_per_token > 0 and fused.launches_per_token == 0
    cuda = {g.model: g for g in record.groups if g.backend == "cuda"}
    metal = {g.model: g for g in record.groups if g.backend == "metal"}
    assert all(g.profile.attribution.timed for g in cuda.values())  # type: ignore[union-attr]
    assert not any(g.profile.attribution.timed for g in metal.values())  # type: ignore[union-attr]
    assert "does not say which kernel decode takes" in markdown
    # The whole token: the GPU-idle row is the unprofiled mlxcel wall time minus the kernels.
    for g in cuda.values():
        a = g.profile.attribution  # type: ignore[union-attr]
        mine = [m.decode_tps for m in g.measurements if m.arm == "mlxcel"]
        assert a.idle and a.idle.wall_us_per_token == pytest.approx(1e6 / (sum(mine) / len(mine)))
        assert a.idle.idle_us_per_token == pytest.approx(a.idle.wall_us_per_token
                                                         - (a.total_us_per_token or 0))
        assert a.phase("unclassified").kernels == 0  # type: ignore[union-attr]
    # A kernel sum over an unprofiled wall is labelled for what it is, never a share of it.
    assert "minus the profiled kernel sum" in markdown and "| **GPU idle**" not in markdown
    # The demo target logs no start times: no timeline, and the record says so.
    assert all(g.profile.attribution.timeline is None for g in cuda.values())  # type: ignore[union-attr]
    assert "busy and idle time per token are not known" in markdown

    # The CUDA kernel table is the two nsys runs subtracted: recompute one from the artifacts.
    ds = cuda["deepseek-v4-flash-4bit"].profile
    assert ds is not None
    files = LocalStore(settings.artifacts).read(sweep_id, ds.cell_id, ds.attempt)
    long, short = (_kern_sum(files[f"profile-{s}-stats.stdout.txt"].read_text())
                   for s in ("long", "short"))
    tokens = ds.tokens[0] - ds.tokens[1]
    gather = next(n for n in long if "gather_qmv_kernel<" in n)
    row = next(k for k in ds.attribution.kernels if k.name == gather)
    assert row.phase == "expert gather"
    assert row.launches_per_token == (long[gather][0] - short[gather][0]) / tokens
    assert row.us_per_token == pytest.approx((long[gather][1] - short[gather][1]) / tokens / 1e3)

    # The answer: a verdict per family, model and backend, and the control comparison.
    answer = record.answer
    assert answer is not None
    assert sorted((v.backend, v.model) for v in answer.verdicts) == sorted(
        (b, m) for b in ("cuda", "metal") for m in FAMILIES)
    for v in answer.verdicts:
        # n = 3 cannot decide a gap ("more repeats"), and a capped gate on a busy CI host
        # flags every run ("host"); past those, Metal stops at its unread trace.
        if v.backend == "metal" and v.outcome != "no gap" and not v.reason.startswith(
                ("more repeats: ", "host: ")):
            assert v.outcome == "not settled" and v.reason.startswith("trace not read")
            assert any("per-kernel time on metal" in m for m in v.missing)
        if v.outcome in ("dominant", "not dominant") and v.backend == "cuda":
            assert cuda[v.model].profile.cell_id in v.settled_by  # type: ignore[union-attr]
    assert sorted(c.backend for c in answer.controls) == ["cuda", "metal"]
    assert "## Verdict" in markdown and "## Control" in markdown
    assert ("inkling-small-mlx-4bit and inkling-small-nvfp4 are one checkpoint under "
            "non-comparable quantization recipes") in markdown
    assert (out / f"{sweep_id}-phases.png").read_bytes()[:4] == b"\x89PNG"

    # A record whose figures were edited no longer passes.
    data = json.loads(json_path.read_text())
    span = data["groups"][0]["rows"][0]["decode_tps"]
    span["mean"] = (span["mean"] + span["max"]) / 2  # still inside its range, but not its mean
    data["answer"]["verdicts"][0]["outcome"] = (
        "dominant" if data["answer"]["verdicts"][0]["outcome"] != "dominant" else "no gap")
    tampered = root / "tampered.json"
    tampered.write_text(json.dumps(data))
    checked = cli(settings, "check", str(tampered))
    assert checked.returncode == 1
    assert "mean (min to max) does not match its measurements" in checked.stdout
    assert "does not follow from the record's own tables" in checked.stdout


def _kern_sum(text: str) -> dict[str, tuple[int, int]]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"Time (%)"'))
    rows = list(csv.DictReader(io.StringIO("\n".join(lines[start:]))))
    return {r["Name"]: (int(float(r["Instances"])), int(float(r["Total Time (ns)"])))
            for r in rows}


def test_missing_checkpoint_and_older_commit_fail_with_their_reason(
        lab: tuple[Settings, Path, Path]) -> None:
    settings, repo, root = lab
    first = subprocess.run(["git", "-C", str(repo), "rev-list", "--max-parents=0", "main"],
                           capture_output=True, text=True, check=True).stdout.strip()
    spec = {"name": "old-and-missing", "target": {"repo": str(repo), "commits": [first, "main"]},
            "models": ["deepseek-v4-flash-4bit", "kimi-k3-4bit"],
            "backends": {"cuda": {"build": "mlxcel-build-cuda"}},
            "arms": [{"name": "mlxcel", "recipe": "mlxcel-bench-decode", "baseline": True,
                      "params": {"prompt_tokens": 32, "max_tokens": 8, "warmup_tokens": 2}}],
            "n": 1, "warmup": 0}
    path = root / "old.yaml"
    path.write_text(yaml.safe_dump(spec))
    refused = cli(settings, "submit", str(path))  # submit sees no worker holds the checkpoint
    assert refused.returncode == 2 and ("no live worker of backend cuda offers model "
                                        "kimi-k3-4bit") in refused.stderr, refused.stderr
    sweep_id = submit(settings, path, "--wait-for-worker")  # the worker says so too
    store = Store.connect(settings.redis_url)
    wait(store, sweep_id)
    states = store.states(sweep_id)
    main = subprocess.run(["git", "-C", str(repo), "rev-parse", "main"], capture_output=True,
                          text=True, check=True).stdout.strip()
    names = {first: first, main: "main"}  # submit resolved "main" to its sha
    reasons = {(names[c.commit], c.model): states[c.id].reason
               for c in store.sweep(sweep_id)[1]}
    host = socket.gethostname()
    assert reasons[("main", "kimi-k3-4bit")] == (
        f"checkpoint kimi-k3-4bit not in MODELS_DIR ({settings.models_dir}) on host {host}")
    assert reasons[(first, "deepseek-v4-flash-4bit")] == (
        f"mlxcel-bench-decode at {first[:12]} lacks --ignore-eos (an older commit?); the "
        "recipe needs them")
    assert reasons[("main", "deepseek-v4-flash-4bit")] is None
