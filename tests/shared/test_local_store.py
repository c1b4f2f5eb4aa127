"""The local artifact store: whole attempts, sha256-verified reads, never rewritten."""

import json
import sys
from pathlib import Path

import pytest

from workers.shared.stores import ArtifactExists, CorruptArtifact
from workers.shared.stores.local import LocalStore


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


def test_json_beside_the_attempts_is_compact_utf8_and_reads_back(tmp_path: Path) -> None:
    # sweep.json and the accepted markers are written by orjson (workers/shared/stores/
    # manifest.py `json_bytes`): for ASCII text, json.dumps's compact bytes.
    store = LocalStore(tmp_path / "store")
    data = {"sweep": {"name": "moe", "n": 3, "alpha": 0.05, "wall_s": 1.25, "big": 12345678901,
                      "on": True, "none": None, "arms": ["gather", "fused"]}, "cells": [{}]}
    store.put_json("s1/sweep.json", data)
    raw = (tmp_path / "store" / "s1" / "sweep.json").read_bytes()
    assert raw == json.dumps(data, separators=(",", ":")).encode()
    # A float's exponent may be written shorter: the same value.
    store.put_json("s1/tiny.json", {"tiny": 1e-07, "huge": 1.5e300})
    tiny = (tmp_path / "store" / "s1" / "tiny.json").read_bytes()
    assert tiny == b'{"tiny":1e-7,"huge":1.5e+300}'
    assert store.get_json("s1/tiny.json") == {"tiny": 1e-07, "huge": 1.5e300}
    # Other text as UTF-8 (json.dumps escaped it), keys that are not text as text: as read.
    store.put_json("s1/other.json", {"name": "décodage ≥ 2×", 7: "seven"})
    raw = (tmp_path / "store" / "s1" / "other.json").read_bytes()
    assert "décodage ≥ 2×".encode() in raw
    assert store.get_json("s1/other.json") == {"name": "décodage ≥ 2×", "7": "seven"}


def test_json_orjson_cannot_write_is_written_as_json_dumps_writes_it(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "store")
    store.put_json("s1/wide.json", {"wide": 2**70})  # wider than orjson's 64 bits
    assert (tmp_path / "store" / "s1" / "wide.json").read_bytes() == b'{"wide":%d}' % 2**70
