"""status and submit run with Python's cycle collector paused (runner/collector.py: at 100,000
cells it was a quarter of a status), and leave it as they found it; a status that follows a
sweep collects as it goes."""

import gc
import subprocess
import sys
from pathlib import Path

import pytest

from runner import cli, collector
from runner.commands import status, submit


class Seen(Exception):
    """Raised by a stand-in for the command's first step, once it has looked."""


@pytest.fixture
def collecting() -> list[bool]:
    assert gc.isenabled()
    return []


def test_status_pauses_the_collector(collecting: list[bool],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    def settings() -> None:
        collecting.append(gc.isenabled())
        raise Seen

    monkeypatch.setattr(status, "load_settings", settings)
    with pytest.raises(Seen):
        cli.main(["status"])
    assert collecting == [False]
    assert gc.isenabled()
    assert not collector._ends_with_command  # called in a process that goes on: no freeze
    assert gc.get_freeze_count() == 0


def test_submit_pauses_the_collector(collecting: list[bool], tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    def settings() -> None:
        collecting.append(gc.isenabled())
        raise Seen

    monkeypatch.setattr(submit, "load_settings", settings)
    (tmp_path / "sweep.yaml").write_text("name: x\n")
    with pytest.raises(Seen):
        cli.main(["submit", str(tmp_path / "sweep.yaml")])
    assert collecting == [False]
    assert gc.isenabled()


def test_a_submit_resumed_collects(collecting: list[bool],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """--resume may read every cell's attempts over SFTP, through asyncio's futures and their
    exceptions' cycles: it runs with the collector on."""
    def settings() -> None:
        collecting.append(gc.isenabled())
        raise Seen

    monkeypatch.setattr(submit, "load_settings", settings)
    with pytest.raises(Seen):
        cli.main(["submit", "--resume", "some-sweep"])
    assert collecting == [True]


def test_a_status_that_follows_collects(collecting: list[bool],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    class Stub:  # a sweep of no cells, nothing cut short
        def resolve(self, name: str | None) -> str:
            return "s"

        def rows(self, sweep_id: str) -> list[object]:
            return []

        def unpublished(self, sweep_id: str) -> set[str]:
            return set()

    class Recovered:
        requeued = failed = lost_messages = 0

    def watch(*args: object) -> None:
        collecting.append(gc.isenabled())
        raise Seen

    monkeypatch.setattr(status, "load_settings", lambda: type("S", (), {
        "redis_url": "redis://x", "max_attempts": 1, "lost_after_s": 1.0})())
    monkeypatch.setattr(status.Store, "connect", lambda url: Stub())
    monkeypatch.setattr(status, "recover", lambda *args: Recovered())
    monkeypatch.setattr("runner.watch.watch", watch)
    with pytest.raises(Seen):
        cli.main(["status", "--watch"])
    assert collecting == [True]
    assert gc.isenabled()


# Run in a child: freezing is for the whole process, and this one goes on.
MADE_WHILE_PAUSED = """
import gc, sys
from runner import collector
if sys.argv[1] == "ends":
    collector.process_ends_with_command()
with collector.paused_collector():
    kept = [[i] for i in range(200_000)]
print(gc.get_freeze_count(), gc.isenabled())
"""


@pytest.mark.parametrize("ends", [True, False])
def test_what_a_last_command_made_is_frozen_not_walked(ends: bool) -> None:
    """In the console script's process the objects made while paused are frozen, so that
    turning the collector back on does not walk them all at once; elsewhere they stay
    collectable."""
    done = subprocess.run([sys.executable, "-c", MADE_WHILE_PAUSED,
                           "ends" if ends else "goes-on"], capture_output=True, text=True,
                          cwd=Path(__file__).parents[2], check=True)
    frozen, enabled = done.stdout.split()
    assert enabled == "True"
    assert int(frozen) >= 200_000 if ends else int(frozen) == 0


def test_the_console_script_says_its_process_ends_with_its_command() -> None:
    script = ("import runner.cli as c, runner.collector as g; "
              "g.process_ends_with_command = lambda: print('ends'); c.entry()")
    done = subprocess.run([sys.executable, "-c", script, "--help"], capture_output=True,
                          text=True, cwd=Path(__file__).parents[2], check=True)
    assert done.stdout.splitlines()[0] == "ends"
