"""The floor under no-op throughput (tests/bench/bare_worker.py `stored`) keeps what a stored
benchfleet attempt keeps: an attempt benchfleet's own store reads and checks against its
manifest, the accepted marker beside it, the cell's state in Redis, and 9 new files and
folders, a benchfleet no-op attempt's count today (the benchmark counts both in every run and
prints them side by side, overhead.md section 2, where a difference would show). A floor
that stored less would make benchfleet's own cost look larger than it is; one that stored
more, smaller."""

import json
from pathlib import Path

import pytest
import redis

from runner.demo.redis_server import RedisServer
from tests.bench.bare_worker import stored
from workers.shared.stores.local import LocalStore

pytestmark = pytest.mark.integration


def test_the_same_work_floor_stores_an_attempt_benchfleet_reads(
        redis_server: RedisServer, tmp_path: Path) -> None:
    root = tmp_path / "store"
    (root / ".staging").mkdir(parents=True)
    before = _inodes(root)
    code = stored(["printf", "decode_tok_s=12.5\\n"], None, {}, str(root), "s1", "c1",
                  redis_server.url)
    assert code == 0
    files = LocalStore(root).read("s1", "c1", 1)  # every file checked against its sha256
    assert set(files) == {"measure.stdout.txt", "measure.stderr.txt", "parsed.json",
                          "result.json"}
    assert json.loads(files["parsed.json"].read_text()) == {"lines": ["decode_tok_s=12.5"]}
    assert json.loads(files["result.json"].read_text())["returncode"] == 0
    assert json.loads((root / "s1" / "c1" / "accepted.json").read_text())["attempt"] == 1
    assert (root / "s1" / "c1" / "attempt-1" / "out").is_dir()
    assert not any((root / ".staging").iterdir())  # moved into place, nothing left behind
    states = redis.Redis.from_url(redis_server.url).hgetall("bare-stored:s1:states")
    assert states == {b"c1": b"done"}
    # the sweep's folder is made once a sweep, as a benchfleet sweep's is: not counted
    assert _inodes(root) - before - 1 == 9


def _inodes(root: Path) -> int:
    return sum(1 for _ in root.rglob("*"))
