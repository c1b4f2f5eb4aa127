"""Settings and key mistakes a user makes are sentences that say what to do (issue: the day
after the demo): lists that are not JSON, keys swapped, a private key left readable."""

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from jobs.errors import UserError
from workers.shared.settings import load_settings
from workers.shared.signing import generate, signer, verifier


@pytest.mark.parametrize(("written", "read"), [
    ("gpu=gb10", ["gpu=gb10"]),
    ("gpu=gb10, nvlink", ["gpu=gb10", "nvlink"]),
    ('["gpu=gb10", "model:q"]', ["gpu=gb10", "model:q"]),
    ("", []),
])
def test_a_list_setting_reads_json_or_commas(monkeypatch: pytest.MonkeyPatch, written: str,
                                             read: list[str]) -> None:
    monkeypatch.setenv("BENCHFLEET_TAGS", written)
    monkeypatch.setenv("BENCHFLEET_ALLOWED_REPOS", written)
    settings = load_settings()
    assert settings.tags == read and settings.allowed_repos == read


def test_a_broken_json_list_is_a_sentence(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCHFLEET_TAGS", '["gpu=gb10"')
    with pytest.raises(UserError, match=r"^setting BENCHFLEET_TAGS: .* is not one; write it as"):
        load_settings()


@pytest.fixture
def keys(tmp_path: Path) -> tuple[Path, Path]:
    private, public = tmp_path / "coordinator.pem", tmp_path / "coordinator.pub"
    generate(private, public)
    return private, public


def test_keys_swapped_are_named(keys: tuple[Path, Path]) -> None:
    private, public = keys
    with pytest.raises(UserError, match="is a public key; BENCHFLEET_SIGNING_KEY needs"):
        signer(public)
    with pytest.raises(UserError, match="is a private key; BENCHFLEET_VERIFY_KEY takes"):
        verifier(private)
    assert signer(private) and verifier(public)


def test_a_key_file_of_something_else_is_named(tmp_path: Path) -> None:
    junk = tmp_path / "notes.txt"
    junk.write_text("not a key\n")
    with pytest.raises(UserError, match="is not an Ed25519 private key"):
        signer(junk)
    with pytest.raises(UserError, match="is not an Ed25519 public key"):
        verifier(junk)


def test_generate_over_a_readable_file_leaves_the_private_key_600(tmp_path: Path) -> None:
    private = tmp_path / "coordinator.pem"
    private.write_text("old\n")
    os.chmod(private, 0o644)
    generate(private, tmp_path / "coordinator.pub")
    assert stat.S_IMODE(private.stat().st_mode) == 0o600


def test_the_cli_says_so_and_exits_2(keys: tuple[Path, Path], tmp_path: Path) -> None:
    private, _ = keys
    env = {**os.environ, "BENCHFLEET_VERIFY_KEY": str(private),
           "BENCHFLEET_REDIS_URL": "redis://127.0.0.1:1/0", "BENCHFLEET_WORKSPACE": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "runner.cli", "worker", "--backend", "cpu"],
                          capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "is a private key; BENCHFLEET_VERIFY_KEY takes the public one" in done.stderr
