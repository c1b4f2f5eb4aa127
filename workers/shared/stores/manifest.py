"""What every store shares: the sha256 manifest an attempt carries, the JSON files it keeps
beside the attempts, and the errors stores raise."""

import hashlib
import json
from pathlib import Path

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
    """What a store's `put_json` writes: bytes given as they are (a sweep's JSON:
    workers/shared/sweep_json.py), other data as `json.dumps` writes it, compact (`jq .`
    reads it)."""
    if isinstance(data, bytes):
        return data
    return json.dumps(data, separators=(",", ":")).encode()
