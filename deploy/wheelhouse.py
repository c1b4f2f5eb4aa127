"""The wheels a host installs from, built on the coordinator: hosts reach no registry.

benchfleet's own wheel is built from this checkout at its version (once per source digest, so
a second deploy uploads the same bytes), and the `worker` extra's dependencies are pinned from
the exported lock file when the checkout has one, else to the versions installed here. They
are downloaded for the host's own interpreter and platform (read from the host's pip), into a
cache that makes a repeated deploy offline.
"""

import fcntl
import hashlib
import re
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from jobs.errors import UserError

SOURCE = Path(__file__).resolve().parents[1]
PACKAGES = ("jobs", "runner", "workers", "deploy")
# Exported from uv.lock by the install script; the first that exists is used.
LOCK_EXPORTS = ("deploy/worker-requirements.txt",)
EXTRA = "worker"
_SAVED = re.compile(r"(?:Saved|File was already downloaded) (\S+\.whl)")


def source_digest(root: Path = SOURCE) -> str:
    """What the wheel is built from: the packages' files and the project's metadata."""
    digest = hashlib.sha256()
    files = [root / "pyproject.toml", root / "README.md"]
    for package in PACKAGES:
        files += [p for p in (root / package).rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts]
    for path in sorted(files):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def own_wheel(cache: Path, root: Path = SOURCE) -> Path:
    if not (root / "pyproject.toml").is_file():
        raise UserError(f"deploy builds benchfleet's wheel from its checkout, and {root} is "
                        "not one; run deploy from a clone installed with ./install.sh")
    folder = cache / "benchfleet" / source_digest(root)
    built = sorted(folder.glob("benchfleet-*.whl"))
    if built:
        return built[0]
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet",
                               "--wheel-dir", tmp, str(root)], capture_output=True, text=True,
                              timeout=600)
        if done.returncode != 0:
            raise UserError(f"building benchfleet's wheel failed: {done.stderr.strip()[-300:]}")
        folder.mkdir(parents=True, exist_ok=True)
        wheel = next(Path(tmp).glob("benchfleet-*.whl"))
        return wheel.rename(folder / wheel.name)


def pins(environment: dict[str, str], root: Path = SOURCE) -> list[str]:
    """`name==version` for every package the worker extra needs on a host whose marker
    environment is `environment`."""
    for name in LOCK_EXPORTS:
        if (root / name).is_file():
            return _from_export(root / name, environment)
    return _from_installed(environment, root)


def download(pinned: list[str], tags: list[str], cache: Path) -> list[Path]:
    """The wheels for `pinned` that fit the host's tags, from the cache or the registry."""
    python = tags[0].split("-")[0]  # cp311
    platforms = list(dict.fromkeys(t.split("-")[2] for t in tags if t.split("-")[2] != "any"))
    folder = cache / python / platforms[0]
    folder.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
            "--dest", str(folder), "--python-version", python[2:], "--implementation",
            python[:2], "--abi", python, "--abi", "abi3", "--abi", "none",
            *(f"--platform={p}" for p in platforms), *pinned]
    # Any folder of this Python may hold them: pip picks from each only what fits these tags
    # (a host whose first tag is manylinux_2_36 takes the wheels fetched for linux_x86_64).
    kept = [f"--find-links={f}" for f in sorted((cache / python).iterdir()) if f.is_dir()]
    with _locked(folder):
        done = subprocess.run([*argv, "--no-index", *kept],
                              capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        last = done.stderr.strip().splitlines()[-1:] or ["no output"]
        raise UserError(f"fetching the host's wheels failed: {last[0]} (the coordinator needs "
                        f"the package registry once per new version or platform; the cache is "
                        f"{cache})")
    return sorted({Path(m) for m in _SAVED.findall(done.stdout)})


def _from_export(path: Path, environment: dict[str, str]) -> list[str]:
    out = []
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].split(" --hash", 1)[0].strip().rstrip("\\").strip()
        if line and not line.startswith("-"):
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate(environment):
                out.append(f"{req.name}{req.specifier}")
    return out


def _from_installed(environment: dict[str, str], root: Path) -> list[str]:
    """Walk benchfleet[worker]'s requirements (from the checkout's pyproject, which the wheel
    is built from) through the installed distributions."""
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    roots = project["dependencies"] + project["optional-dependencies"][EXTRA]
    wanted: dict[str, str] = {}
    seen: set[tuple[str, frozenset[str]]] = set()
    todo = [(Requirement(r), set()) for r in roots]
    while todo:
        req, extras = todo.pop()
        name = canonicalize_name(req.name)
        if not _applies(req.marker, environment, extras) or (name, frozenset(req.extras)) in seen:
            continue
        seen.add((name, frozenset(req.extras)))
        try:
            version = metadata.version(name)
        except metadata.PackageNotFoundError:
            wanted.setdefault(name, f"{name}{req.specifier}")  # the host needs what we lack
            continue
        wanted[name] = f"{name}=={version}"
        todo += [(Requirement(r), set(req.extras)) for r in metadata.requires(name) or []]
    return sorted(wanted.values())


def _applies(marker: Marker | None, environment: dict[str, str], extras: set[str]) -> bool:
    if marker is None:
        return True
    return any(marker.evaluate({**environment, "extra": e}) for e in extras or {""})


@contextmanager
def _locked(folder: Path) -> Iterator[None]:
    # Deploys to several hosts (or parallel tests) share the cache.
    with (folder / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
