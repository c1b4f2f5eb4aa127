"""What every store shares: the sha256 manifest an attempt carries, the JSON files it keeps
beside the attempts, and the errors stores raise."""

import hashlib
import json
from pathlib import Path

import orjson

from jobs.spec.confine import inside

MANIFEST = "manifest.json"
# Hashes the files named on its stdin, on the storage host: python3, because coreutils'
# sha256sum is several times slower than OpenSSL's hash and this runs on the publish path.
REMOTE_SHA256 = ("import hashlib,json,sys\n"
                 "def h(p):\n"
                 " d=hashlib.sha256();b=bytearray(1<<20);v=memoryview(b)\n"
                 " with open(p,'rb',buffering=0) as f:\n"
                 "  while n:=f.readinto(b):d.update(v[:n])\n"
                 " return d.hexdigest()\n"
                 "print(json.dumps({p:h(p) for p in sys.stdin.read().splitlines()}))\n")


class CorruptArtifact(Exception):
    """An attempt whose files do not match its manifest."""


class ArtifactExists(Exception):
    """An attempt number the store already holds: attempts are never rewritten."""


def confined(manifest: dict[str, object], where: str) -> None:
    """Refuse a manifest naming a file outside its attempt: whoever wrote the attempt (a
    worker, anyone on the storage host) must not make the coordinator read or write
    elsewhere."""
    for name in manifest:
        if "/" not in name and name not in ("", ".", ".."):
            continue  # one plain component (most names): inside, with no paths worked out
        if name.startswith("/") or inside(name, "/attempt") in (None, "/attempt"):
            raise CorruptArtifact(f"{where}: the manifest names {name[:120]!r}, outside the "
                                  "attempt")



def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def encoded(data: object) -> bytes:
    """What a store's `put_json` writes: bytes given as they are (`json_bytes`' output), other
    data as `json.dumps` writes it, compact (`jq .` reads it)."""
    if isinstance(data, bytes):
        return data
    return json.dumps(data, separators=(",", ":")).encode()


def json_bytes(data: object) -> bytes:
    """A sweep's JSON (its cells, rows and envelopes in Redis, its sweep.json), compact, in
    UTF-8, some seven times faster than `json.dumps` (a 10,000-cell sweep.json, 15 MB: 9
    against 63 ms, the largest part of submit's own work after signing). The same values as
    `json.dumps(data, separators=(",", ":"))`, and its bytes for ASCII text, integers and
    most floats; a float's exponent may be written shorter (1e-7 for 1e-07), and other text
    as UTF-8 rather than escaped. Keys that are not text are written as text, as `json.dumps`
    writes them. What orjson refuses (an integer wider than 64 bits) is written by
    `json.dumps`. Only for a sweep's data: orjson writes NaN and infinity as null, and a
    sweep holds none (its parameters are checked finite: jobs/strict.py `Param`; its other
    numbers are bounded); other JSON a store keeps goes through `encoded`. Nothing compares
    these bytes across versions: their readers parse them."""
    try:
        return orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS)
    except orjson.JSONEncodeError:
        return json.dumps(data, separators=(",", ":")).encode()
