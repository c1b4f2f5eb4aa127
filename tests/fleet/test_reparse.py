"""`check --artifacts` parses the raw output again: a store whose result.json, parsed.json and
manifest were rewritten together, with a record rebuilt from it, fails on what stdout says."""

import hashlib
import json
from pathlib import Path

from jobs.record.attempts import AttemptResult
from jobs.record.check import check_record
from runner.records import gather_stored
from tests.support.evidence import store_copy
from tests.support.fleet import cli
from workers.shared.settings import Settings
from workers.shared.stores import open_store


def test_the_clean_store_parses_again_to_what_it_says(
        made: tuple[str, Path], settings: Settings) -> None:  # noqa: F811
    sweep_id, out = made
    done = cli(settings, "check", str(out / f"{sweep_id}.json"), "--artifacts",
               str(settings.artifacts))
    assert done.returncode == 0, done.stdout
    result = next(AttemptResult.model_validate_json(p.read_text())
                  for p in (settings.artifacts / sweep_id).glob("*/attempt-*/result.json"))
    assert result.parser == "mlxcel-bench-decode"
    assert result.asked == {"prompt_tokens": 32, "max_tokens": 16}


def _rewrite(folder: Path) -> float:
    """Double the decode rate in result.json and parsed.json, and re-sign both in the
    manifest, as one who wanted a faster figure would; returns the rate stdout holds."""
    result = AttemptResult.model_validate_json((folder / "result.json").read_text())
    assert result.reading is not None
    faster = result.reading.model_copy(update={"decode_tps": result.reading.decode_tps * 2})
    (folder / "result.json").write_text(
        result.model_copy(update={"reading": faster}).model_dump_json(indent=1))
    (folder / "parsed.json").write_text(faster.model_dump_json(indent=1))
    manifest = json.loads((folder / "manifest.json").read_text())
    for name in ("result.json", "parsed.json"):
        raw = (folder / name).read_bytes()
        manifest["files"][name] = {"sha256": hashlib.sha256(raw).hexdigest(), "bytes": len(raw)}
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return result.reading.decode_tps


def test_a_store_rewritten_together_fails_on_its_raw_stdout(
        made: tuple[str, Path], settings: Settings, tmp_path: Path) -> None:  # noqa: F811
    sweep_id, _ = made
    root = store_copy(settings, sweep_id, tmp_path)
    store = open_store(root)
    victim = gather_stored(store, sweep_id).groups[0].measurements[0]
    folder = root / sweep_id / victim.cell_id / f"attempt-{victim.attempt}"
    printed = _rewrite(folder)
    assert f"({printed:.2f} tok/s)" in (folder / "measure.stdout.txt").read_text()
    # The record made from the rewritten store is consistent with itself and with the store's
    # result.json files: only the raw output tells.
    record = gather_stored(store, sweep_id)
    assert check_record(record) == []
    m = next(m for g in record.groups for m in g.measurements if m.cell_id == victim.cell_id)
    assert m.decode_tps == printed * 2
    path = tmp_path / "rewritten.json"
    path.write_text(record.model_dump_json(indent=1))
    done = cli(settings, "check", str(path), "--artifacts", str(root))
    assert done.returncode == 1, done.stdout
    said = (f"FAIL {victim.cell_id} attempt {victim.attempt}: its raw output, parsed again with "
            "mlxcel-bench-decode, differs from")
    found = f"decode_tps: raw {printed!r}, stated {printed * 2!r}"
    for what in ("its parsed.json", "its result.json", "the record's measurement"):
        assert f"{said} {what}: {found}" in done.stdout, done.stdout
    assert "3 problems" in done.stdout
