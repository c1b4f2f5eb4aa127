"""Cells: deterministic ids, rotating round-robin order, arms limited to their models."""

import hashlib
import json

from jobs.spec.cells import expand
from jobs.spec.specfile import load
from jobs.spec.sweep import Sweep
from tests.support.samples import EVERY_KIND_SWEEP, SWEEP


def sweep(text: str = SWEEP) -> Sweep:
    return load(Sweep, text, "s.yaml")[0]


def test_same_spec_same_ids_and_all_ids_distinct() -> None:
    first, second = expand(sweep()), expand(sweep())
    assert [c.id for c in first] == [c.id for c in second]
    assert len({c.id for c in first}) == len(first)
    # 2 commits x 2 backends x (2 arms x 3 on a3 + 3 arms x 3 on b5)
    assert len(first) == 2 * 2 * (6 + 9)


def test_ids_are_readable_and_change_with_what_is_measured() -> None:
    cell = expand(sweep())[0]
    assert cell.id.startswith("main-cuda-tinymoe-a3-gather-r1-")
    changed = expand(sweep(SWEEP.replace('MLXCEL_FUSED_MOE: "0"', 'MLXCEL_FUSED_MOE: "off"')))
    assert changed[0].slug == cell.slug and changed[0].id != cell.id


def test_an_id_hashes_the_cell_s_identity_as_json_dumps_writes_it() -> None:
    # Ids are kept in Redis, sweep files and records: the JSON they hash must not change.
    cells = expand(sweep(EVERY_KIND_SWEEP))
    assert {c.kind for c in cells} == {"bench", "profile"}
    for c in cells:
        identity = {"repo": c.repo, "commit": c.commit, "backend": c.backend, "kind": c.kind,
                    "model": c.model, "arm": c.arm, "repeat": c.repeat, "warmup": c.warmup,
                    "build": c.build.model_dump(), "run": c.run.model_dump(),
                    **({"host": c.host} if c.host else {}),
                    **({"requires": c.requires} if c.requires else {})}
        digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()
        assert c.id == f"{c.slug}-{digest[:10]}"


def test_arms_rotate_across_repeats_within_a_group() -> None:
    group = [c for c in expand(sweep()) if c.group == "main/cuda/tinymoe-b5"]
    order = [(c.repeat, c.arm) for c in group]
    assert order == [(1, "gather"), (1, "fused"), (1, "long"),
                     (2, "fused"), (2, "long"), (2, "gather"),
                     (3, "long"), (3, "gather"), (3, "fused")]
    assert [c.order for c in group] == sorted(c.order for c in group)


def test_arm_limited_to_a_model_runs_only_there() -> None:
    cells = expand(sweep())
    assert {c.model for c in cells if c.arm == "long"} == {"tinymoe-b5"}
    assert all(c.warmup == 1 for c in cells)
