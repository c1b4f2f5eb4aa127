"""The target's history from a good commit to a bad one, along the bad one's first parents.

Bisect walks first parents, as asv's `find` does: a merged branch counts as one step, so every
commit it measures is one the main line really had. A remote target is read from a blob-less
bare clone (history only), made in a temporary directory and removed after.
"""

import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from jobs.errors import UserError
from runner.submit import _REMOTE  # submit's one test of "a git URL, not a path"

_GIT_TIMEOUT_S = 600


def first_parents(repo: str, good: str, bad: str) -> list[tuple[str, str]]:
    """(sha, subject) of good, every commit after it, and bad, oldest first."""
    with _readable(repo) as where:
        log = _git(where, "log", "--first-parent", "--format=%H%x00%P%x00%s", bad, f"^{good}")
        subject = _git(where, "log", "-1", "--format=%s", good).strip()
    lines = [line.split("\0") for line in reversed(log.splitlines())]
    if not lines or lines[0][1].split(" ")[0] != good:
        raise UserError(f"good {good[:12]} is not on the first-parent history of bad "
                        f"{bad[:12]} in {repo}; give a good commit that bad descends from "
                        "along its main line")
    return [(good, subject), *((sha, text) for sha, _, text in lines)]


@contextmanager
def _readable(repo: str) -> Iterator[str]:
    if not _REMOTE.match(repo):
        yield repo
        return
    with tempfile.TemporaryDirectory(prefix="benchfleet-history-") as tmp:
        clone = str(Path(tmp) / "history.git")
        _git(None, "clone", "--quiet", "--bare", "--filter=blob:none", "--", repo, clone)
        yield clone


def _git(where: str | None, *args: str) -> str:
    argv = ["git", *(["-C", where] if where else []), *args]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=_GIT_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise UserError(f"cannot run `git {args[0]}`: {error}") from None
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or ["no message"])[0]
        raise UserError(f"`git {' '.join(args[:2])}` failed in {where or 'a clone'}: {first}")
    return done.stdout
