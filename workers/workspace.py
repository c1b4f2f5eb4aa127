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
from dataclasses import dataclass
from pathlib import Path

from jobs.attempts import BuildInfo, Run
from jobs.parsers.exits import failed_exit, last_line
from jobs.readings import Failure, RunOutput
from jobs.recipes import Invocation
from workers import execute
from workers.locks import held

_SHA = re.compile(r"^[0-9a-f]{40}$")


class CellFailure(Exception):
    def __init__(self, failure: Failure) -> None:
        self.failure = failure
        super().__init__(failure.reason)


@dataclass(frozen=True)
class Build:
    info: BuildInfo
    run: Run | None
    logs: Path
    out: Path


class Workspace:
    def __init__(self, root: Path) -> None:
        self.root = root

    def checkout(self, repo: str, commit: str) -> tuple[str, Path]:
        """The full sha of `commit` and a worktree checked out at it."""
        key = _key(repo)
        mirror = self.root / "mirrors" / f"{key}.git"
        with held(self.root / "locks" / f"repo-{key}.lock"):
            if not mirror.exists():
                _clone(repo, mirror)
            # A sha already here cannot change; a branch or tag might have moved.
            sha = _rev_parse(mirror, commit) if _SHA.match(commit) else None
            if sha is None:
                _git(mirror, "fetch", "--prune", "--quiet", "origin", what=f"fetch {repo}")
                sha = _rev_parse(mirror, commit)
            if sha is None:
                raise CellFailure(Failure(kind="setup", reason=f"commit {commit!r} not found "
                                          f"in {repo} (after fetching it)"))
            tree = self.root / "trees" / key / sha
            if not tree.exists():
                _git(mirror, "worktree", "prune", what="prune worktrees")
                _git(mirror, "worktree", "add", "--detach", "--quiet", str(tree), sha,
                     what=f"check out {sha[:12]}")
        return sha, tree

    def build_dir(self, repo: str, sha: str, backend: str, recipe: str) -> Path:
        return self.root / "builds" / _key(repo) / sha / backend / recipe

    def build(self, where: Path, tree: Path, recipe: str, call: Invocation,
              sweep_id: str) -> Build:
        """Run the build once under a host lock; later callers get the recorded result."""
        marker, out, logs = where / "build.json", where / "out", where / "logs"
        with held(where.parent / f"{where.name}.lock"):
            cached = _cached(marker, sweep_id)
            if cached:
                info = BuildInfo.model_validate(cached["info"])
                run = Run.model_validate(cached["run"]) if cached.get("run") else None
                return Build(info.model_copy(update={"cached": True}), run, logs, out)
            shutil.rmtree(out, ignore_errors=True)
            shutil.rmtree(logs, ignore_errors=True)
            out.mkdir(parents=True)
            logs.mkdir(parents=True)
            files = execute.Files(logs / "stdout.txt", logs / "stderr.txt")
            run = execute.run("build", call, tree, files, logs)
            failure = failed_exit(_output(run, logs, call))
            info = BuildInfo(recipe=recipe, ok=failure is None, cached=False,
                             wall_s=run.wall_s, built_at=run.ended,
                             reason=f"build failed: {failure.reason}" if failure else None)
            _write_json(marker, {"info": info.model_dump(), "run": run.model_dump(),
                                 "sweep_id": sweep_id})
        return Build(info, run, logs, out)


def _cached(marker: Path, sweep_id: str) -> dict[str, object] | None:
    if not marker.exists():
        return None
    data: dict[str, object] = json.loads(marker.read_text())
    ok = BuildInfo.model_validate(data["info"]).ok
    return data if ok or data.get("sweep_id") == sweep_id else None


def _output(run: Run, logs: Path, call: Invocation) -> RunOutput:
    return RunOutput(stdout=(logs / "stdout.txt").read_text(errors="replace"),
                     stderr=(logs / "stderr.txt").read_text(errors="replace"),
                     exit_code=run.exit_code, timed_out=run.timed_out, timeout_s=call.timeout_s)


def _key(repo: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_-]+", "_", Path(repo.rstrip("/")).name.removesuffix(".git"))
    return f"{name}-{hashlib.sha256(repo.encode()).hexdigest()[:10]}"


def _clone(repo: str, mirror: Path) -> None:
    temp = mirror.with_name(mirror.name + ".partial")
    shutil.rmtree(temp, ignore_errors=True)
    temp.parent.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(["git", "clone", "--mirror", "--quiet", repo, str(temp)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise CellFailure(Failure(kind="setup", reason=f"cannot clone {repo}: "
                                  f"{last_line(result.stderr) or 'git clone failed'}"))
    os.rename(temp, mirror)


def _rev_parse(mirror: Path, commit: str) -> str | None:
    result = subprocess.run(["git", "--git-dir", str(mirror), "rev-parse", "--verify",
                             "--quiet", f"{commit}^{{commit}}"], capture_output=True, text=True)
    return result.stdout.strip() if result.returncode == 0 else None


def _git(mirror: Path, *args: str, what: str) -> None:
    result = subprocess.run(["git", "--git-dir", str(mirror), *args],
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise CellFailure(Failure(kind="setup", reason=f"cannot {what}: "
                                  f"{last_line(result.stderr) or 'git failed'}"))


def _write_json(path: Path, data: dict[str, object]) -> None:
    temp = path.with_name(f".{path.name}.tmp")
    temp.write_text(json.dumps(data, indent=1))
    os.replace(temp, path)
