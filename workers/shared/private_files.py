"""Files only their owner may read: private keys, passwords, env files with secrets."""

import os
from pathlib import Path


def write_private(path: Path, data: bytes) -> None:
    """`path` whole, mode 600 before any byte lands, whatever mode an older file had."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # O_CREAT's mode does not apply to a file that already existed
    with os.fdopen(fd, "wb") as f:
        f.write(data)
