"""The local artifact store: whole attempts, sha256-verified reads, never rewritten."""

import json
import sys
from pathlib import Path

import pytest

from workers.shared.stores import ArtifactExists, CorruptArtifact
from workers.shared.stores.local import LocalStore
from workers.shared.sweep_json import json_bytes


def test_publish_read_verify(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "store")
    staging = store.staging()
    (staging / "result.json").write_text("{}")
    (staging / "build").mkdir()
    (staging / "build" / "stdout.txt").write_text("compiled\n")
    where = store.publish(staging, "s1", "cell-a", 1)
    assert not staging.exists() and Path(where).is_dir()
    files = store.read("s1", "cell-a", 1)
    assert sorted(files) == ["build/stdout.txt", "result.json"]
    assert store.attempts("s1", "cell-a") == [1] and store.attempts("s1", "other") == []

    again = store.staging()
    with pytest.raises(ArtifactExists, match="already holds attempt 1"):
        store.publish(again, "s1", "cell-a", 1)

    files["build/stdout.txt"].write_text("changed\n")
    with pytest.raises(CorruptArtifact, match="does not match its sha256"):
        store.read("s1", "cell-a", 1)
    (Path(where) / "manifest.json").unlink()
    with pytest.raises(CorruptArtifact, match="manifest unreadable"):
        store.read("s1", "cell-a", 1)


def test_read_result_verifies_every_file_and_reads_each_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = LocalStore(tmp_path / "store")
    staging = store.staging()
    (staging / "result.json").write_text('{"ok": 1}')
    (staging / "run.stdout.txt").write_text("decoded\n")
    where = Path(store.publish(staging, "s1", "cell-a", 1))
    opened: list[str] = []
    real_open = open

    def counted(path: str, *args: object, **kwargs: object) -> object:
        opened.append(str(path))
        return real_open(path, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr("builtins.open", counted)
    result, manifest = store.read_result("s1", "cell-a", 1)
    monkeypatch.undo()
    assert result == b'{"ok": 1}' and manifest == (where / "manifest.json").read_bytes()
    assert sorted(Path(p).name for p in opened) == ["manifest.json", "result.json",
                                                    "run.stdout.txt"]

    (where / "run.stdout.txt").write_text("changed\n")
    with pytest.raises(CorruptArtifact, match="run.stdout.txt: missing or does not match"):
        store.read_result("s1", "cell-a", 1)
    (where / "run.stdout.txt").unlink()
    with pytest.raises(CorruptArtifact, match="missing or does not match"):
        store.read_result("s1", "cell-a", 1)


def test_a_cells_store_calls_intern_none_of_its_ids(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker publishes each cell and reads and writes its accepted marker. Python 3.11's
    pathlib interns every part of a path it parses, and a cell's id, interned anew each cell
    and dropped again, churns the interpreter's table of interned strings until it doubles:
    a step in the worker's memory that bare Celery does not take."""
    store = LocalStore(tmp_path / "store")
    staging = store.staging("spare-w1")  # the worker's spare: one name for every attempt
    (staging / "result.json").write_text("{}")
    interned: list[str] = []
    real = sys.intern
    monkeypatch.setattr(sys, "intern", lambda s: interned.append(s) or real(s))
    store.publish(staging, "sweep-20261207-0a1b", "c0ffee-metal-tinymoe-a3-r1-9f8e", 1)
    relative = "sweep-20261207-0a1b/c0ffee-metal-tinymoe-a3-r1-9f8e/accepted.json"
    assert store.get_json(relative) is None
    store.put_json(relative, {"attempt": 1})
    assert store.get_json(relative) == {"attempt": 1}
    assert not [s for s in interned if "0a1b" in s or "9f8e" in s]


def test_a_sweeps_json_is_json_dumps_compact_values_written_by_orjson(tmp_path: Path) -> None:
    # sweep.json, and the sweep's cells in Redis, are written by orjson (workers/shared/
    # sweep_json.py `json_bytes`): for ASCII text, json.dumps's compact bytes.
    data = {"sweep": {"name": "moe", "n": 3, "alpha": 0.05, "wall_s": 1.25, "big": 12345678901,
                      "on": True, "none": None, "arms": ["gather", "fused"]}, "cells": [{}]}
    assert json_bytes(data) == json.dumps(data, separators=(",", ":")).encode()
    # A float's exponent may be written shorter; other text as UTF-8 (json.dumps escaped it);
    # keys that are not text as text; an integer wider than orjson's 64 bits by json.dumps.
    raw = json_bytes({"tiny": 1e-07, "name": "décodage ≥ 2×", 7: "seven"})
    assert b'"tiny":1e-7' in raw and "décodage ≥ 2×".encode() in raw
    assert json.loads(raw) == {"tiny": 1e-07, "name": "décodage ≥ 2×", "7": "seven"}
    assert json_bytes({"wide": 2**70}) == b'{"wide":%d}' % 2**70
    # The store writes such bytes as they are, and any other data as json.dumps writes it:
    # NaN kept as json.dumps keeps it, where orjson would write null.
    store = LocalStore(tmp_path / "store")
    store.put_json("s1/sweep.json", json_bytes(data))
    assert (tmp_path / "store" / "s1" / "sweep.json").read_bytes() == json_bytes(data)
    store.put_json("s1/verdicts.json", {"p": float("nan")})
    assert (tmp_path / "store" / "s1" / "verdicts.json").read_bytes() == b'{"p":NaN}'
    assert store.get_json("s1/sweep.json") == data
