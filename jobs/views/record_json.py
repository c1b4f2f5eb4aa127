"""The record's JSON, in pieces: the lists that grow with the sweep (its groups and their
measurements, host runs, evidence, history) are serialised one element at a time, so a
100,000-cell record is not also held as one 300 MB string. The bytes are those of
`to_json(record, indent=1)`: `benchfleet check` reads either the same."""

from collections.abc import Iterator, Sequence

from jobs.record.model import Record
from jobs.strict import dumped_json

_INDENT = 1
# The record's lists that hold an element per cell, attempt or group.
_GROWING = ("groups", "missing", "skipped", "host_runs", "evidence", "history")


def json_pieces(record: Record) -> Iterator[bytes]:
    """The record as `to_json(record, indent=1)` writes it, piece by piece."""
    lists = {name: getattr(record, name) for name in _GROWING}
    head = _json(record.model_copy(update={name: [] for name in _GROWING}))
    for name in _GROWING:  # each list's place in the head: ` "name": []` at the top level
        before, marker, head = head.partition(b'\n "%s": []' % name.encode())
        if not marker:
            raise ValueError(f"the record's JSON has no top-level {name}")
        yield before
        yield b'\n "%s": ' % name.encode()
        yield from _list(lists[name])
    yield head


def _list(items: Sequence[object]) -> Iterator[bytes]:
    """A top-level list's elements, each indented under its key as the whole would be."""
    if not items:
        yield b"[]"
        return
    inner = b"\n" + b" " * 2 * _INDENT
    for k, item in enumerate(items):
        yield (b"[" if k == 0 else b",") + inner + _json(item).replace(b"\n", inner)
    yield b"\n" + b" " * _INDENT + b"]"


def _json(part: object) -> bytes:
    return dumped_json(part, indent=_INDENT)  # a model or a `slotted` part
