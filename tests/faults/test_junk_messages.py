"""Junk written straight into a worker's queue with redis-py — text, a JSON list, a message
shaped like Celery's whose body is not base64, one whose body is base64 of no JSON, and JSON
nested 200,000 deep: the worker refuses each (an entry in the refused log, with why), drops
it, and goes on to measure the next real sweep."""

import base64
import json
import time
from pathlib import Path

import pytest

from tests.faults.harness import lab
from tests.support.waits import eventually
from workers.shared.queues import TASK, backend_queue

pytestmark = pytest.mark.integration
DEEP = 200_000


def _celery_shaped(body: str) -> str:
    return json.dumps({"body": body, "content-encoding": "utf-8",
                       "content-type": "application/json",
                       "headers": {"lang": "py", "task": TASK, "id": "junk-task"},
                       "properties": {"delivery_tag": "junk-tag", "body_encoding": "base64",
                                      "delivery_info": {"exchange": "", "routing_key": "x"}}})


JUNK = {"plain text": "x", "a JSON list": "[1,2,3]",
        "bad base64": _celery_shaped("!!not base64!!"),
        "base64 of no JSON": _celery_shaped(base64.b64encode(b"not json").decode()),
        "nested 200,000 deep": "[" * DEEP + "]" * DEEP}


def test_junk_in_the_queue_is_refused_and_the_worker_keeps_serving(
        tmp_path: Path, matrix: list[dict]) -> None:
    with lab(tmp_path) as lab_:
        worker = lab_.fleet.start("cpu", "w1")
        store = lab_.store
        store.r.delete("benchfleet:refused")
        pushed_at = time.monotonic()
        for junk in JUNK.values():
            store.r.lpush(backend_queue("cpu"), junk)
        sweep_id = lab_.sweep("after-junk", n=1)
        eventually(lambda: worker.poll() is not None or len(store.refused()) == len(JUNK),
                   60, "every junk message refused")
        assert worker.poll() is None, "the worker exited: " + _tail(lab_.root, "w1")
        lab_.wait(sweep_id)
        recovered_s = time.monotonic() - pushed_at
        assert worker.poll() is None, "the worker exited: " + _tail(lab_.root, "w1")
        assert {s.status for s in store.states(sweep_id).values()} == {"done"}
        refused = store.refused()
        assert len(refused) == len(JUNK), refused
        assert all(r["worker"] == "w1" and r["why"].startswith(
            "a message on benchfleet.backend.cpu is not a benchfleet task") for r in refused)
        assert store.r.llen(backend_queue("cpu")) == 0, "the junk was dropped"
        print(f"from the push to the cell done: {recovered_s:.1f} s; refused: "
              + "; ".join(r["why"] for r in refused))
        matrix.append({"fault": "junk in a queue (text, a JSON list, a body that is not "
                       "base64 or not JSON, JSON nested 200,000 deep)", "outcome": "each "
                       "refused with its reason in the refused log and dropped; the worker "
                       "never exits and measures the next sweep",
                       "recovery_s": round(recovered_s, 1)})


def _tail(root: Path, name: str) -> str:
    return (root / "logs" / f"worker-{name}-cpu.log").read_text()[-3000:]
