"""The same sweep submitted twice is refused in one sentence, with nothing saved or queued,
whether the first is still running or has ended, or both are submitted at once; `submit
--again` measures it again."""

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runner.demo.local_fleet import settings_env
from tests.support.fleet import Target, arms, cli, sweep_file
from tests.support.waits import eventually
from workers.shared import redis_keys
from workers.shared.queues import backend_queue
from workers.shared.redis_keys import SPECS
from workers.shared.settings import Settings
from workers.shared.state import Store

pytestmark = pytest.mark.integration

UNSERVED = "nobody"  # no worker serves this backend: the cells stay queued


def _spec(name: str, target: Target) -> dict[str, object]:
    return {"name": name, "target": {"repo": str(target.repo), "commits": "main"},
            "models": ["tinymoe-a3"], "backends": {UNSERVED: {"build": "tinymoe-build"}},
            "arms": arms("gather", "fused"), "n": 1}


def _submitted(settings: Settings, path: Path, *flags: str) -> str:
    done = cli(settings, "submit", "--wait-for-worker", *flags, str(path))
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def _what_redis_holds(store: Store) -> tuple[list[str], int]:
    return store.sweep_ids(), store.r.llen(backend_queue(UNSERVED))


def test_an_identical_sweep_is_refused_until_asked_again(
        settings: Settings, store: Store, target: Target, tmp_path: Path) -> None:
    path = sweep_file(tmp_path, _spec("twice", target))
    first = _submitted(settings, path)
    before = _what_redis_holds(store)

    refused = cli(settings, "submit", str(path))
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert refused.stderr == (
        f"benchfleet: sweep {first} (2 queued) has the same spec and commits and is still in "
        f"Redis; `benchfleet status {first}` shows it, and `benchfleet submit --again "
        f"{path.resolve()}` measures it again\n")
    assert _what_redis_holds(store) == before  # nothing saved, nothing queued
    assert sorted(p.name for p in Path(settings.artifacts).iterdir()
                  if p.name.startswith("twice-")) == [first]

    again = _submitted(settings, path, "--again")
    assert again != first and {first, again} <= set(store.sweep_ids())
    assert store.r.llen(backend_queue(UNSERVED)) == before[1] + 1  # one more group message
    assert store.r.hget(SPECS, store.sweep(again)[2]["spec_hash"]) == again  # newest named


def test_an_ended_sweep_is_named_with_its_end(
        settings: Settings, store: Store, target: Target, tmp_path: Path) -> None:
    path = sweep_file(tmp_path, _spec("twice-ended", target))
    first = _submitted(settings, path)
    assert cli(settings, "cancel", first).returncode == 0
    refused = cli(settings, "submit", str(path))
    assert refused.returncode == 2
    assert f"sweep {first} (2 cancelled) has the same spec" in refused.stderr
    assert "--again" in refused.stderr


def test_other_commits_or_a_sweep_gone_from_redis_are_not_the_same(
        settings: Settings, store: Store, target: Target, tmp_path: Path) -> None:
    spec = _spec("twice-other", target)
    first = _submitted(settings, sweep_file(tmp_path, spec))
    _submitted(settings, sweep_file(tmp_path, {**spec, "target": {
        "repo": str(target.repo), "commits": target.first}}))  # same name, another commit
    store.r.delete(redis_keys.sweep(first))  # lost (a flush, a delete): its index entry is stale
    _submitted(settings, sweep_file(tmp_path, spec))


def test_two_identical_submits_at_once_save_one(
        settings: Settings, store: Store, target: Target, tmp_path: Path) -> None:
    path = sweep_file(tmp_path, _spec("twice-at-once", target))
    fifo = tmp_path / "pause"
    os.mkfifo(fifo)
    # One submit held just before its save, past the early check; the other runs meanwhile.
    held = subprocess.Popen(
        [sys.executable, "-m", "tests.support.cut_submit", f"pause-before-save={fifo}",
         "submit", "--wait-for-worker", str(path)], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, env={**os.environ, **settings_env(settings)})
    release = eventually(lambda: _writer(fifo), 60, "the held submit waits at its save")
    first = _submitted(settings, path)
    os.write(release, b"go\n")
    os.close(release)
    _, stderr = held.communicate(timeout=120)
    assert held.returncode == 2, stderr
    assert f"benchfleet: sweep {first} (2 queued) has the same spec and commits" in stderr
    assert [s for s in store.sweep_ids() if s.startswith("twice-at-once-")] == [first]
    queued = [json.loads(base64.b64decode(json.loads(m)["body"]))[0][0]
              for m in store.r.lrange(backend_queue(UNSERVED), 0, -1)]
    assert [s for s in queued if s.startswith("twice-at-once-")] == [first]  # its one message


def _writer(fifo: Path) -> int | None:
    """A write end of `fifo` once a reader has opened it; None before."""
    try:
        return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:  # ENXIO: no reader yet
        return None
