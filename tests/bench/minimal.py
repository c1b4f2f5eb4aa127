"""The minimal baselines for `submit`, `status` and `record`: what a short script doing the
same work costs. Plain PyYAML, cryptography, redis-py, json and hashlib; none of benchfleet is
imported, so a process running this pays only for Python and those libraries.

Run: python -m tests.bench.minimal submit SWEEP_YAML REDIS_URL ARTIFACTS_DIR SIGNING_KEY_PEM
     python -m tests.bench.minimal status REDIS_URL SWEEP_ID
     python -m tests.bench.minimal record ARTIFACTS_DIR SWEEP_ID
"""

import base64
import hashlib
import json
import os
import secrets
import sys
import uuid
from collections import Counter, defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


def submit(spec_path: Path, url: str, artifacts: Path, key_pem: Path) -> str:
    """Expand the sweep's cells, sign each one's envelope, store the sweep beside the artifacts
    and in Redis, queue one message per group: submit's work, without its checks (the spec
    against the catalogue, commit names, live workers), its models or its resume steps.
    The spec names its commits by sha. Returns the sweep id."""
    import redis
    import yaml
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    spec = yaml.safe_load(spec_path.read_text())
    key = load_pem_private_key(key_pem.read_bytes(), password=None)
    assert isinstance(key, Ed25519PrivateKey), f"{key_pem} is not an Ed25519 key"
    sweep_id = f"{spec['name']}-{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"
    cells = _expand(spec)
    spec_hash = hashlib.sha256(_canonical(spec)).hexdigest()
    signed = {}
    for cell in cells:
        envelope = _canonical({"protocol": 1, "sweep_id": sweep_id, "generation": 0,
                               "spec_hash": spec_hash, "cell": cell, "rebuild": False})
        signed[cell["id"]] = [envelope.decode(),
                              base64.b64encode(key.sign(envelope)).decode()]
    folder = artifacts / sweep_id
    folder.mkdir(parents=True)
    (folder / "sweep.json.tmp").write_text(json.dumps(
        {"sweep_id": sweep_id, "sweep": spec, "cells": cells, "envelopes": signed}))
    (folder / "sweep.json.tmp").rename(folder / "sweep.json")
    groups: dict[str, list[str]] = defaultdict(list)
    for cell in cells:
        groups[f"{cell['commit']}/{cell['backend']}/{cell['model']}"].append(cell["id"])
    pipe = redis.Redis.from_url(url).pipeline()
    key_of = f"benchfleet:sweep:{sweep_id}"
    pipe.hset(key_of, mapping={"sweep": json.dumps(spec), "cells": json.dumps(cells)})
    queued = json.dumps({"status": "queued"})
    pipe.hset(f"{key_of}:states", mapping={c["id"]: queued for c in cells})
    pipe.hset(f"{key_of}:envelopes", mapping={c: json.dumps(s) for c, s in signed.items()})
    pipe.zadd("benchfleet:sweeps", {sweep_id: datetime.now(UTC).timestamp()})
    for group, members in groups.items():
        backend = group.split("/")[1]
        pipe.lpush(f"benchfleet.backend.{backend}",
                   _message(sweep_id, [signed[c] for c in members]))
    pipe.execute()
    return sweep_id


def _expand(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """Commits x backends x models x repeats x arms (arms rotated by repeat), as dicts."""
    cells: list[dict[str, Any]] = []
    target = spec["target"]
    for commit in target["commits"]:
        for backend, build in spec["backends"].items():
            for model in spec["models"]:
                arms = spec["arms"]
                for r in range(spec["n"]):
                    for arm in arms[r % len(arms):] + arms[:r % len(arms)]:
                        identity = {"repo": target["repo"], "commit": commit,
                                    "backend": backend, "model": model, "arm": arm["name"],
                                    "repeat": r + 1, "warmup": spec.get("warmup", 0),
                                    "build": {"recipe": build["build"], "params": {}, "env": {}},
                                    "run": {"recipe": arm["recipe"],
                                            "params": arm.get("params", {}),
                                            "env": arm.get("env", {})}}
                        digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode())
                        slug = f"{commit[:12]}-{backend}-{model}-{arm['name']}-r{r + 1}"
                        cells.append({**identity, "id": f"{slug}-{digest.hexdigest()[:10]}",
                                      "slug": slug, "kind": "bench",
                                      "baseline": bool(arm.get("baseline")),
                                      "order": len(cells)})
    return cells


def _canonical(data: object) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def _message(sweep_id: str, items: list[list[str]]) -> str:
    """A Celery protocol-2 message as kombu's Redis transport stores it."""
    task_id = str(uuid.uuid4())
    body = json.dumps([[sweep_id, items], {}, {}])
    return json.dumps({"body": base64.b64encode(body.encode()).decode(),
                       "content-encoding": "utf-8", "content-type": "application/json",
                       "headers": {"lang": "py", "task": "benchfleet.run_group", "id": task_id},
                       "properties": {"correlation_id": task_id, "delivery_mode": 2,
                                      "body_encoding": "base64",
                                      "delivery_tag": str(uuid.uuid4())}})


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
    if argv[0] == "submit":
        print(submit(Path(argv[1]), argv[2], Path(argv[3]), Path(argv[4])))
        return
    what, where, sweep_id = argv
    if what == "status":
        print(dict(status(where, sweep_id)))
    else:
        print(record(Path(where), sweep_id), "attempts")


if __name__ == "__main__":
    main(sys.argv[1:])
