"""A record's attempts read from its artifact store by a child, a step ahead of the record.

Each attempt's files are read and hashed against its manifest (the store's `read_result`),
then its result.json is validated and digested: at 10,000 cells the reading and hashing was
about half of that work (docs/benchmarks/overhead-profiles.md). A child forked from the
record's process reads and hashes them and sends each result.json and manifest down a pipe,
in order, while the record's process validates and digests the ones before: the two halves
run side by side, the child as far ahead as the pipe and its buffer hold (some 30 attempts).

Only from a local store (a forked child must not share the SFTP store's session) and where a
child can be forked (runner/forked.py); elsewhere, and from wherever the child stopped, the
attempts are read here, the same way. What the child sends is what `read_result` returned or
raised, in words: the record states a store's error by its text alone (an OSError comes back
as a plain one, its text the same).
"""

import gc
import struct
from collections.abc import Generator, Sequence
from functools import partial
from typing import BinaryIO

from runner.forked import Streamed
from workers.shared.stores import ArtifactStore, CorruptArtifact
from workers.shared.stores.local import LocalStore

# What `read_result` gave: result.json's bytes (None when the manifest lists none) and the
# manifest's, or the error it raised.
Got = tuple[bytes | None, bytes] | CorruptArtifact | OSError

# A frame: its kind, then the lengths of the two byte strings that follow it.
_FRAME = struct.Struct("<BII")
_RESULT, _NO_RESULT, _CORRUPT, _OS_ERROR = range(4)


def read_results(store: ArtifactStore, sweep_id: str, wanted: Sequence[tuple[str, int]]
                 ) -> Generator[Got, None, None]:
    """What `store.read_result` gives for each (cell, attempt) of `wanted`, in order."""
    done = 0
    if isinstance(store, LocalStore) and wanted:
        with Streamed(partial(_send, store, sweep_id, wanted)) as child:
            while (child.pipe is not None and done < len(wanted)
                   and (got := _receive(child.pipe)) is not None):
                yield got
                done += 1
    for cell_id, attempt in wanted[done:]:
        yield read_one(store, sweep_id, cell_id, attempt)


def read_one(store: ArtifactStore, sweep_id: str, cell_id: str, attempt: int) -> Got:
    try:
        return store.read_result(sweep_id, cell_id, attempt)
    except (CorruptArtifact, OSError) as error:
        return error


def _send(store: ArtifactStore, sweep_id: str, wanted: Sequence[tuple[str, int]],
          out: BinaryIO) -> None:
    """In the child: every attempt read, each sent as one frame."""
    gc.disable()  # a collection would touch, and so copy, every page it shares with its parent
    for cell_id, attempt in wanted:
        got = read_one(store, sweep_id, cell_id, attempt)
        if isinstance(got, tuple):
            raw, manifest = got
            kind, first, second = (_NO_RESULT, b"", manifest) if raw is None else (
                _RESULT, raw, manifest)
        else:
            kind = _CORRUPT if isinstance(got, CorruptArtifact) else _OS_ERROR
            first, second = str(got).encode(), b""
        out.write(_FRAME.pack(kind, len(first), len(second)))
        out.write(first)
        out.write(second)


def _receive(pipe: BinaryIO) -> Got | None:
    """The next attempt the child sent; None where it stopped before sending it whole."""
    head = pipe.read(_FRAME.size)
    if len(head) < _FRAME.size:
        return None
    kind, first_size, second_size = _FRAME.unpack(head)
    first, second = pipe.read(first_size), pipe.read(second_size)
    if len(first) < first_size or len(second) < second_size:
        return None
    if kind == _RESULT:
        return first, second
    if kind == _NO_RESULT:
        return None, second
    text = first.decode()
    return CorruptArtifact(text) if kind == _CORRUPT else OSError(text)
