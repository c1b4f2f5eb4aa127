"""What a signed cell may name on a worker: ids and model names that stay one directory
level, paths that stay inside their directory, and target repositories in an allow-list.

Lexical checks only (no file system here): the worker builds every path it uses from these
pieces, so a name that is one plain component cannot point anywhere else.
"""

import posixpath
import re
from fnmatch import fnmatchcase

# One path component: what sweep ids, cell ids and model names are made of.
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_SHA = re.compile(r"^[0-9a-f]{40}$")
# Git URLs a worker may clone: these schemes, or scp-like USER@HOST:PATH, or an absolute path.
_SCHEMES = ("https://", "http://", "ssh://", "git://", "file://")
_SCP = re.compile(r"^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^:]")


def name_problem(value: str, what: str) -> str | None:
    """Why `value` is not a safe one-component name, or None."""
    if len(value) > 200:
        return f"{what} is longer than 200 characters"
    if not _NAME.fullmatch(value):  # a first letter or digit also rules out '.' and '..'
        return (f"{what} {value[:80]!r} is not a plain name (a letter or digit, then letters, "
                "digits, '.', '_' or '-'; no '/')")
    return None


def commit_problem(value: str) -> str | None:
    if not _SHA.fullmatch(value):
        return f"commit {value[:80]!r} is not a 40-hex sha (submit resolves every commit)"
    return None


def inside(path: str, root: str) -> str | None:
    """`path` (relative to `root`, or absolute) made absolute, if it stays inside `root`."""
    root = posixpath.normpath(root)
    full = posixpath.normpath(posixpath.join(root, path))
    return full if full == root or full.startswith(root.rstrip("/") + "/") else None


def repo_problem(repo: str) -> str | None:
    """Why `repo` is not a git URL or absolute path a worker would clone, or None."""
    if any(ord(c) < 0x21 for c in repo) or repo.startswith("-") or "::" in repo:
        return f"repository {repo[:120]!r} is not a plain git URL or absolute path"
    if "/../" in f"{repo}/" or repo.endswith("/.."):
        return f"repository {repo[:120]!r} has a '..' segment"
    if not (repo.startswith(_SCHEMES) or _SCP.match(repo) or repo.startswith("/")):
        return (f"repository {repo[:120]!r} is neither an absolute path nor a URL of "
                f"{', '.join(s.removesuffix('://') for s in _SCHEMES)} or USER@HOST:PATH")
    return None


def repo_allowed(repo: str, allowed: list[str]) -> bool:
    """Whether an allow-list entry (exact, or a glob) names `repo`; a trailing `/` or
    `.git` is ignored on both sides. An empty list allows nothing."""
    plain = _plain(repo)
    return any(fnmatchcase(plain, _plain(pattern)) for pattern in allowed)


def _plain(repo: str) -> str:
    return repo.rstrip("/").removesuffix(".git")
