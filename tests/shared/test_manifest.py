"""What every store shares: a manifest never names a file outside its attempt, and files are
hashed as sha256 (the same hash the storage host's script computes)."""

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from workers.shared.stores.manifest import REMOTE_SHA256, CorruptArtifact, confined, sha256_file


def test_a_manifest_inside_its_attempt_passes() -> None:
    confined({"result.json": "x", "out/decode.dot": "y", "build/cargo.stdout.txt": "z"}, "a1")


@pytest.mark.parametrize("name", ["/etc/passwd", "../other/result.json", "out/../../x", "..",
                                  ".", ""])
def test_a_name_outside_the_attempt_is_corrupt(name: str) -> None:
    with pytest.raises(CorruptArtifact, match="outside the attempt"):
        confined({name: "x"}, "s/c/attempt-1")


def test_both_hashes_agree_with_sha256(tmp_path: Path) -> None:
    data = bytes(range(256)) * 9000  # more than one read block
    path = tmp_path / "big.bin"
    path.write_bytes(data)
    expected = hashlib.sha256(data).hexdigest()
    assert sha256_file(path) == expected
    done = subprocess.run([sys.executable, "-c", REMOTE_SHA256], input=str(path),
                          capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == {str(path): expected}
