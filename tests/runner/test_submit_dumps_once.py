"""Submit dumps each cell to JSON data once and uses it for the envelope, Redis and the sweep
file: what it writes is what dumping each cell for each of them wrote."""

import json
from pathlib import Path

from jobs.spec.cells import dumped_cell, expand
from jobs.spec.envelope import encode
from jobs.spec.specfile import load
from jobs.spec.sweep import Sweep
from runner.records import SWEEP_FILE, SweepFile, write_sweep_file
from tests.support.cells import SPEC
from workers.shared.stores.local import LocalStore


def test_a_cell_dumped_once_writes_what_it_wrote_before(tmp_path: Path) -> None:
    sweep = load(Sweep, SPEC, "hooks.yaml")[0]
    cells = expand(sweep)
    dumped = [dumped_cell(c) for c in cells]
    for cell, data in zip(cells, dumped, strict=True):
        assert encode("s-1", 0, "spec", cell, dumped=data) == encode("s-1", 0, "spec", cell)
    content = SweepFile(protocol=1, sweep_id="s-1", created="now", source="hooks.yaml",
                        sweep=sweep, cells=cells)
    files = {}
    for name, given in (("each", None), ("once", dumped)):
        store = LocalStore(tmp_path / name)
        write_sweep_file(store, content, given)
        files[name] = json.loads((tmp_path / name / "s-1" / SWEEP_FILE).read_text())
    assert files["once"] == files["each"]
