"""A host's workspace: a git mirror per target, a worktree per commit, a build per backend.

A successful build is kept and reused by every later cell of that (commit, backend, recipe);
a failed one is reused only within the sweep that saw it fail.
"""

import hashlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tenacity import retry, retry_if_exception_type, stop_after_attempt, wait_exponential_jitter

from jobs.parsers.exits import failed_exit, last_line
from jobs.parsers.readings import Failure
from jobs.record.attempts import BuildInfo, Run
from jobs.spec.recipes import Invocation
from workers import execute
from workers.locks import held
from workers.shared.kept_names import kept

_SHA = re.compile(r"^[0-9a-f]{40}$")


class CellFailure(Exception):
    def __init__(self, failure: Failure) -> None:
        self.failure = failure
        super().__init__(failure.reason)


@dataclass(frozen=True)
class Build:
    info: BuildInfo
    runs: list[Run]
    logs: Path


class Workspace:
    def __init__(self, root: Path, git_timeout_s: float = 600.0) -> None:
        self.root = root
        self.git_timeout_s = git_timeout_s
        self._known: dict[tuple[str, str], tuple[str, Path]] = {}

    def checkout(self, repo: str, commit: str) -> tuple[str, Path]:
        """The full sha of `commit` and a worktree checked out at it; no git work at all for
        a sha whose worktree this host already has."""
        known = self._known.get((repo, commit))
        if known and known[1].is_dir():
            return known
        if _SHA.match(commit):
            tree = self.root / "trees" / _key(repo) / commit
            if (tree / ".git").exists():
                self._known[(repo, commit)] = (commit, tree)
                return commit, tree
        sha, tree = self._checkout(repo, commit)
        if _SHA.match(commit):
            self._known[(repo, commit)] = (sha, tree)
        return sha, tree

    def facts(self, tree: Path, probe: Callable[[], dict[str, str]]) -> dict[str, str]:
        """Provenance read from a tree once per (target, commit), kept beside the worktree."""
        cached = tree.with_name(kept(tree.name + ".facts.json"))
        if cached.exists():
            data: dict[str, str] = json.loads(cached.read_text())
            return data
        found = probe()
        _write_json(cached, found)  # type: ignore[arg-type]
        return found

    def _checkout(self, repo: str, commit: str) -> tuple[str, Path]:
        key = _key(repo)
        mirror = self.root / "mirrors" / f"{key}.git"
        with held(self.root / "locks" / f"repo-{key}.lock"):
            if not mirror.exists():
                _clone(repo, mirror, self.git_timeout_s)
            # A sha already here cannot change; a branch or tag might have moved.
            sha = _rev_parse(mirror, commit) if _SHA.match(commit) else None
            if sha is None:
                _git(["fetch", "--prune", "--quiet", "origin"], f"fetch {repo}",
                     self.git_timeout_s, mirror)
                sha = _rev_parse(mirror, commit)
            if sha is None:
                raise CellFailure(Failure(kind="setup", reason=f"commit {commit!r} not found "
                                          f"in {repo} (after fetching it)"))
            tree = self.root / "trees" / key / sha
            if not tree.exists():
                _git(["worktree", "prune"], "prune worktrees", self.git_timeout_s, mirror)
                _git(["worktree", "add", "--detach", "--quiet", str(tree), sha],
                     f"check out {sha[:12]}", self.git_timeout_s, mirror)
        return sha, tree

    def build_dir(self, repo: str, sha: str, backend: str, recipe: str) -> Path:
        """Where a commit's build lives (`{build}`); nothing writes there once it is done."""
        return self.root / "builds" / _key(repo) / sha / backend / recipe

    def cache_dir(self, repo: str, backend: str) -> Path:
        """One directory per (target, backend) kept across commits (`{cache}`), e.g. cargo's
        target directory, so a new commit rebuilds incrementally."""
        return self.root / "caches" / _key(repo) / backend

    def build(self, where: Path, cache: Path, tree: Path, recipe: str,
              calls: list[tuple[str, Invocation]], scope: str, rebuild: bool,
              run: Callable[[execute.Command], Run]) -> Build:
        """Run the build's steps once; later callers get the recorded result.

        A good build is kept for every later cell; a failed one only within `scope` (a sweep's
        generation), so `rerun` builds again. `rebuild` forces one new build for the scope.
        The lock is the backend's cache directory: two builds never share it at once.
        """
        marker, logs = where / "build.json", where / "logs"
        with held(cache.parent / kept(f"{cache.name}.lock")):
            cached = _cached(marker, scope, rebuild)
            if cached:
                info = BuildInfo.model_validate(cached["info"])
                runs = [Run.model_validate(r) for r in cached["runs"]]  # type: ignore[attr-defined]
                return Build(info.model_copy(update={"cached": True}), runs, logs)
            for path in (where / "out", logs):
                shutil.rmtree(path, ignore_errors=True)
                path.mkdir(parents=True)
            cache.mkdir(parents=True, exist_ok=True)
            runs, failure = [], None
            for name, call in calls:
                files = execute.Files(logs / f"{name}.stdout.txt", logs / f"{name}.stderr.txt")
                runs.append(run(execute.Command("build", f"build-{name}", call, tree, files,
                                                logs)))
                failure = failed_exit(execute.output(runs[-1], logs, call.timeout_s))
                if failure:
                    step = f"step {name}: " if len(calls) > 1 else ""
                    failure = failure.model_copy(update={"reason": step + failure.reason})
                    break
            info = BuildInfo(recipe=recipe, ok=failure is None, cached=False,
                             wall_s=round(sum(r.wall_s for r in runs), 3),
                             built_at=runs[-1].ended,
                             reason=f"build failed: {failure.reason}" if failure else None)
            _write_json(marker, {"info": info.model_dump(),
                                 "runs": [r.model_dump() for r in runs], "scope": scope,
                                 "forced": scope if rebuild else None})
        return Build(info, runs, logs)


def _cached(marker: Path, scope: str, rebuild: bool) -> dict[str, object] | None:
    if not marker.exists():
        return None
    data: dict[str, object] = json.loads(marker.read_text())
    if rebuild and data.get("forced") != scope:
        return None
    ok = BuildInfo.model_validate(data["info"]).ok
    return data if ok or data.get("scope") == scope else None


def _key(repo: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_-]+", "_", Path(repo.rstrip("/")).name.removesuffix(".git"))
    return f"{name}-{hashlib.sha256(repo.encode()).hexdigest()[:10]}"


def _clone(repo: str, mirror: Path, timeout_s: float) -> None:
    temp = mirror.with_name(mirror.name + ".partial")
    shutil.rmtree(temp, ignore_errors=True)
    temp.parent.mkdir(parents=True, exist_ok=True)
    _git(["clone", "--mirror", "--quiet", repo, str(temp)], f"clone {repo}", timeout_s)
    os.rename(temp, mirror)


def _rev_parse(mirror: Path, commit: str) -> str | None:
    result = subprocess.run(["git", "--git-dir", str(mirror), "rev-parse", "--verify",
                             "--quiet", f"{commit}^{{commit}}"], capture_output=True, text=True)
    return result.stdout.strip() if result.returncode == 0 else None


# What git prints when the network, not the request, failed: worth trying again.
_TRANSIENT_GIT = re.compile(
    r"could not resolve host|connection (timed out|reset|refused)|early eof|rpc failed|"
    r"the remote end hung up|unable to access|operation timed out|temporary failure",
    re.IGNORECASE)
GIT_TRIES = 4


class _TransientGit(Exception):
    pass


def _git(args: list[str], what: str, timeout_s: float, mirror: Path | None = None) -> None:
    argv = ["git", *(["--git-dir", str(mirror)] if mirror else []), *args]

    @retry(retry=retry_if_exception_type(_TransientGit), stop=stop_after_attempt(GIT_TRIES),
           wait=wait_exponential_jitter(initial=1, max=30), reraise=True)
    def once() -> None:
        try:
            result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise _TransientGit(f"git {args[0]} took longer than {timeout_s:g} s") from None
        if result.returncode == 0:
            return
        line = last_line(result.stderr) or f"git {args[0]} failed"
        if _TRANSIENT_GIT.search(result.stderr):
            raise _TransientGit(line)
        raise CellFailure(Failure(kind="setup", reason=f"cannot {what}: {line}"))

    try:
        once()
    except _TransientGit as error:
        raise CellFailure(Failure(kind="setup", reason=f"cannot {what} after {GIT_TRIES} "
                                  f"tries: {error}")) from None


def _write_json(path: Path, data: dict[str, object]) -> None:
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")  # two workers may race here
    temp.write_text(json.dumps(data, indent=1))
    os.replace(temp, path)
