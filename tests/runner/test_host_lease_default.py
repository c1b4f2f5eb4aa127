"""One host lease per host by default: two demos, a fleet and a hand-started worker take turns
measuring on this machine, whatever directory each works in (issue: the day after the demo)."""

from pathlib import Path

import pytest

from runner.demo.run import demo_settings
from workers.shared.settings import load_settings


def test_demos_in_two_directories_and_a_worker_share_this_hosts_lease(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BENCHFLEET_HOST_LOCK", raising=False)
    first = demo_settings(tmp_path / "first", "redis://127.0.0.1:1/0", tmp_path / "target")
    monkeypatch.chdir(tmp_path)
    second = demo_settings(tmp_path / "second", "redis://127.0.0.1:1/0", tmp_path / "target")
    worker = load_settings()
    assert first.host_lock == second.host_lock == worker.host_lock
    assert not first.host_lock.is_relative_to(tmp_path)


def test_a_host_lock_set_in_the_environment_is_the_demos_too(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCHFLEET_HOST_LOCK", str(tmp_path / "lab.lock"))
    demo = demo_settings(tmp_path / "demo", "redis://127.0.0.1:1/0", tmp_path / "target")
    assert demo.host_lock == tmp_path / "lab.lock"
