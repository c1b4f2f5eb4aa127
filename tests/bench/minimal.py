"""The minimal baselines for `status` and `record`: what a short script doing the same reading
costs. Plain redis-py, json and hashlib; none of benchfleet is imported, so a process running
this pays only for Python and redis-py.

Run: python -m tests.bench.minimal status REDIS_URL SWEEP_ID
     python -m tests.bench.minimal record ARTIFACTS_DIR SWEEP_ID
"""

import hashlib
import json
import os
import sys
from collections import Counter
from pathlib import Path


def status(url: str, sweep_id: str) -> Counter[str]:
    """One HGETALL of the sweep's cell states, and counts per state."""
    import redis

    raw = redis.Redis.from_url(url).hgetall(f"benchfleet:sweep:{sweep_id}:states")
    return Counter(json.loads(v)["status"] for v in raw.values())


def record(artifacts: Path, sweep_id: str) -> int:
    """Every attempt of the sweep: its manifest read, every file in it sha256-checked, its
    result.json parsed. Returns the number of attempts read."""
    read = 0
    for cell in os.scandir(artifacts / sweep_id):
        if not cell.is_dir():
            continue
        for attempt in os.scandir(cell.path):
            if not attempt.name.startswith("attempt-"):
                continue
            folder = Path(attempt.path)
            manifest = json.loads((folder / "manifest.json").read_bytes())["files"]
            for name, entry in manifest.items():
                if hashlib.sha256((folder / name).read_bytes()).hexdigest() != entry["sha256"]:
                    raise ValueError(f"{folder / name} does not match its sha256")
            json.loads((folder / "result.json").read_bytes())
            read += 1
    return read


def main(argv: list[str]) -> None:
    what, where, sweep_id = argv
    if what == "status":
        print(dict(status(where, sweep_id)))
    else:
        print(record(Path(where), sweep_id), "attempts")


if __name__ == "__main__":
    main(sys.argv[1:])
