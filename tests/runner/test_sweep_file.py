"""sweep.json read back: whole for a restore, without the signed envelopes for a record, and
one sentence for a file that is not one."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from jobs.errors import UserError
from jobs.spec.cells import Cell
from jobs.spec.sweep import Sweep
from runner.records import _atomic
from runner.sweep_file import SWEEP_FILE_PROTOCOL, SweepFile, read_sweep_file, write_sweep_file
from workers.shared.stores.local import LocalStore


def _stored(small: tuple[Sweep, list[Cell]], tmp_path: Path) -> LocalStore:
    sweep, cells = small
    store = LocalStore(tmp_path / "store")
    write_sweep_file(store, SweepFile(
        protocol=SWEEP_FILE_PROTOCOL, sweep_id="s1", created="now", source="s.yaml",
        sweep=sweep, cells=cells, envelopes={c.id: ["{}", "sig"] for c in cells}))
    return store


def test_a_restore_reads_the_envelopes_and_a_record_goes_without(
        small: tuple[Sweep, list[Cell]], tmp_path: Path) -> None:
    store = _stored(small, tmp_path)
    whole, lean = read_sweep_file(store, "s1"), read_sweep_file(store, "s1", envelopes=False)
    assert set(whole.envelopes) == {c.id for c in small[1]}
    assert lean.envelopes == {} and lean.cells == whole.cells == small[1]
    assert lean.sweep == whole.sweep


def test_a_byte_order_mark_is_read_past(small: tuple[Sweep, list[Cell]],
                                        tmp_path: Path) -> None:
    store = _stored(small, tmp_path)
    path = tmp_path / "store" / "s1" / "sweep.json"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert read_sweep_file(store, "s1").cells == small[1]


@pytest.mark.parametrize(("content", "said"), [
    (b"{not json", "is not a sweep file: Invalid JSON"),
    (b'{"protocol": 1}', "is not a sweep file: Field required"),
])
def test_a_file_that_is_not_a_sweep_file_is_one_sentence(
        small: tuple[Sweep, list[Cell]], tmp_path: Path, content: bytes, said: str) -> None:
    store = _stored(small, tmp_path)
    (tmp_path / "store" / "s1" / "sweep.json").write_bytes(content)
    with pytest.raises(UserError, match=said):
        read_sweep_file(store, "s1")


def test_a_record_written_in_pieces_leaves_nothing_when_a_piece_fails(tmp_path: Path) -> None:
    def pieces() -> Iterator[bytes]:
        yield b"{"
        raise ValueError("a view failed")

    with pytest.raises(ValueError, match="a view failed"):
        _atomic(tmp_path / "r.json", pieces())
    assert list(tmp_path.iterdir()) == []
