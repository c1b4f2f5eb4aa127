"""The local artifact store: whole attempts, sha256-verified reads, never rewritten."""

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
