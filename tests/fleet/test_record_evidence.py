"""A record checked against its evidence: `check --artifacts` re-reads every attempt, verifies
its sha256 and recomputes every figure, so a tampered artifact or a consistently edited record
fails where a clean one passes."""

import csv
import hashlib
import json
import re
from pathlib import Path

import pytest

from jobs.record.attempts import AttemptResult
from jobs.record.check import check_record
from jobs.record.model import build_record
from runner.records import read_sweep_file, recorded_states
from tests.support.evidence import store_copy
from tests.support.fleet import cli
from workers.shared.settings import Settings
from workers.shared.stores import open_store

pytestmark = pytest.mark.integration


def test_the_record_carries_its_evidence_and_raw_data(made: tuple[str, Path],
                                                      settings: Settings) -> None:
    sweep_id, out = made
    record = json.loads((out / f"{sweep_id}.json").read_text())
    assert record["schema_version"] == 4 and record["issue"] == 1859
    assert record["aa_arm"] == "gather-aa" and record["adaptive_max_n"] == 4
    used = [e for e in record["evidence"] if e["used"]]
    assert len(used) == record["cells_measured"]
    for e in used:
        folder = settings.artifacts / sweep_id / e["cell_id"] / f"attempt-{e['attempt']}"
        assert hashlib.sha256((folder / "result.json").read_bytes()).hexdigest() == \
            e["result_sha256"]
    rows = list(csv.DictReader((out / "data" / sweep_id / "measurements.csv").open()))
    assert len(rows) == record["cells_measured"]
    text = (out / f"{sweep_id}.md").read_text()
    assert text.split("\n\n")[1].startswith("Issue #1859.")
    assert (out / f"{sweep_id}-prefill.png").read_bytes().startswith(b"\x89PNG")
    # Every measurement held the host lease and passed the idle gate, capped in tests: none
    # overlaps another command on the host, and one that found the host busy says so.
    ms = [m for g in record["groups"] for m in g["measurements"]]
    assert ms and not any("no host lease" in f or "overlap" in f or "not recorded" in f
                          for m in ms for f in m["flags"]), [m["flags"] for m in ms]
    assert all(("host not idle" in m["flags"]) == (not m["gate"]["idle"]) for m in ms)


def test_a_clean_store_passes(made: tuple[str, Path], settings: Settings) -> None:
    sweep_id, out = made
    done = cli(settings, "check", str(out / f"{sweep_id}.json"), "--artifacts",
               str(settings.artifacts))
    assert done.returncode == 0, done.stdout
    assert "passes" in done.stdout


def test_a_changed_byte_fails(made: tuple[str, Path], settings: Settings,
                              tmp_path: Path) -> None:
    sweep_id, out = made
    root = store_copy(settings, sweep_id, tmp_path)
    record = json.loads((out / f"{sweep_id}.json").read_text())
    victim = next(e for e in record["evidence"] if e["used"])
    path = root / sweep_id / victim["cell_id"] / f"attempt-{victim['attempt']}" / "result.json"
    data = bytearray(path.read_bytes())
    data[data.index(b'"decode_tps": ') + 15] ^= 1  # one digit of the measurement
    path.write_bytes(bytes(data))
    done = cli(settings, "check", str(out / f"{sweep_id}.json"), "--artifacts", str(root))
    assert done.returncode == 1
    assert "result.json: missing or does not match its sha256" in done.stdout


def test_a_rewritten_result_with_a_consistent_manifest_fails(made: tuple[str, Path],
                                                             settings: Settings,
                                                             tmp_path: Path) -> None:
    sweep_id, out = made
    root = store_copy(settings, sweep_id, tmp_path)
    record = json.loads((out / f"{sweep_id}.json").read_text())
    victim = next(e for e in record["evidence"] if e["used"])
    folder = root / sweep_id / victim["cell_id"] / f"attempt-{victim['attempt']}"
    result = AttemptResult.model_validate_json((folder / "result.json").read_text())
    assert result.reading
    faster = result.model_copy(update={"reading": result.reading.model_copy(
        update={"decode_tps": result.reading.decode_tps * 2})})
    (folder / "result.json").write_text(faster.model_dump_json(indent=1))
    manifest = json.loads((folder / "manifest.json").read_text())
    raw = (folder / "result.json").read_bytes()
    manifest["files"]["result.json"] = {"sha256": hashlib.sha256(raw).hexdigest(),
                                        "bytes": len(raw)}
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))
    done = cli(settings, "check", str(out / f"{sweep_id}.json"), "--artifacts", str(root))
    assert done.returncode == 1
    assert f"{victim['cell_id']} attempt {victim['attempt']}: its result.json or manifest is " \
           "not the one the record read" in done.stdout
    assert re.search(r"decode_tps(\.mean)?: the record says", done.stdout)


def test_a_consistently_edited_record_passes_alone_but_not_against_its_artifacts(
        made: tuple[str, Path], settings: Settings, tmp_path: Path) -> None:
    from runner.records import load

    sweep_id, out = made
    record = load(out / f"{sweep_id}.json")
    stored = read_sweep_file(open_store(settings.artifacts), sweep_id)
    results = {}
    for e in record.evidence:
        folder = settings.artifacts / sweep_id / e.cell_id / f"attempt-{e.attempt}"
        if e.used:
            results[e.cell_id] = AttemptResult.model_validate_json(
                (folder / "result.json").read_text())
    victim = next(iter(results))
    r = results[victim]
    assert r.reading
    results[victim] = r.model_copy(update={"reading": r.reading.model_copy(
        update={"decode_tps": r.reading.decode_tps * 3})})
    # Every row, ratio and comparison recomputed around the edited measurement: consistent.
    edited = build_record(sweep_id, stored.sweep, stored.cells, recorded_states(record, results),
                          results, {}, record.created)
    edited = edited.model_copy(update={"evidence": record.evidence,
                                       "host_runs": record.host_runs})
    assert check_record(edited) == []
    path = tmp_path / "edited.json"
    path.write_text(edited.model_dump_json(indent=1))
    alone = cli(settings, "check", str(path))
    assert alone.returncode == 0, alone.stdout
    against = cli(settings, "check", str(path), "--artifacts", str(settings.artifacts))
    assert against.returncode == 1
    assert re.search(r"decode_tps(\.mean)?: the record says", against.stdout)
