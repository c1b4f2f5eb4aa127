"""The benchmark's same-work submit baseline (tests/bench/minimal.py) does submit's work: as
many cells stored, states and envelopes kept and messages queued as `benchfleet submit` of the
same sweep, envelopes of the same size that verify against the coordinator's key, and its
sweep.json beside the artifacts. A baseline that did less would flatter nothing but itself."""

import json
from pathlib import Path

import pytest

from runner.submit import submit
from tests.bench import minimal
from tests.support.fleet import Target, arms, sweep_file
from workers.shared import redis_keys
from workers.shared.queues import backend_queue
from workers.shared.settings import Settings
from workers.shared.signing import verifier
from workers.shared.state import Store

pytestmark = pytest.mark.integration

UNSERVED = "bench-baseline"  # no worker serves it: what each side queued stays to be counted


def test_the_minimal_submit_does_what_submit_does(settings: Settings, store: Store,
                                                  target: Target, tmp_path: Path) -> None:
    path = sweep_file(tmp_path, {  # shas: the baseline resolves no names
        "name": "baseline", "target": {"repo": str(target.repo),
                                       "commits": [target.first, target.main]},
        "models": ["tinymoe-a3", "tinymoe-b1"], "backends": {UNSERVED: {"build": "tinymoe-build"}},
        "arms": arms("gather", "fused"), "n": 3})
    queue = backend_queue(UNSERVED)
    ours, cells = submit(path, settings, again=True)
    queued = store.r.llen(queue)
    theirs = minimal.submit(path, settings.redis_url, Path(settings.artifacts),
                            Path(str(settings.signing_key)))
    assert len(cells) == 2 * 2 * 2 * 3
    assert store.r.llen(queue) == 2 * queued == 2 * 2 * 2  # one message per group, each
    for key in ("states", "envelopes"):
        assert store.r.hlen(redis_keys.sweep(theirs, key)) == len(cells)
    assert len(json.loads(store.r.hget(redis_keys.sweep(theirs), "cells"))) == len(cells)
    check = verifier(settings.verify_key)
    envelopes = {k: json.loads(v) for k, v in
                 store.r.hgetall(redis_keys.sweep(theirs, "envelopes")).items()}
    for envelope, signature in envelopes.values():
        check.verify(envelope.encode(), signature)
    mine = [json.loads(v)[0] for v in store.r.hgetall(redis_keys.sweep(ours, "envelopes")).values()]
    size = sum(len(e) for e, _ in envelopes.values()) / sum(len(e) for e in mine)
    assert 0.8 < size < 1.25, size
    assert (Path(settings.artifacts) / theirs / "sweep.json").is_file()
