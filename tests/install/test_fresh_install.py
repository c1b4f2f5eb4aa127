"""install.sh for real, in a copy of this checkout, with nothing on PATH but one python3 and the
system tools: Debian's own python3 (its pip refuses to touch the system: PEP 668), a python3 with
no pip at all (Debian and Ubuntu as installed), and an old python3 (3.10, as on Ubuntu 22.04) for
which uv installs Python 3.12. Each fetches uv from PyPI and ends with a working `benchfleet` in
.venv, built from uv.lock."""

import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tests.install.fakehost import BASH, REAL_TOOLS, ROOT, pinned

pytestmark = pytest.mark.integration
TOOLS = (*REAL_TOOLS, "uname", "id", "git", "redis-server")
DEBIAN_PYTHON = Path("/usr/bin/python3.11")
INSTALL_DEADLINE_S = 300


def checkout_copy(dest: Path) -> Path:
    """The files git would clone (committed or not yet), without .venv, .uv and caches."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=ROOT, capture_output=True, text=True, check=True).stdout
    for name in filter(None, listed.split("\0")):
        if (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    return dest


def install_with(python3: Path, tmp_path: Path,
                 uv_env: dict[str, str] | None = None) -> tuple[Path, list[str]]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in TOOLS:
        found = shutil.which(tool)
        assert found, f"{tool} is not on this machine"
        (bin_dir / tool).symlink_to(found)
    # A wrapper, not a link: a link would lose the venv around a venv's python.
    (bin_dir / "python3").write_text(f'#!/bin/sh\nexec {python3} "$@"\n')
    (bin_dir / "python3").chmod(0o755)
    checkout = checkout_copy(tmp_path / "checkout")
    env = {key: value for key, value in os.environ.items() if key != "VIRTUAL_ENV"}
    done = subprocess.run([BASH, str(checkout / "install.sh")], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=INSTALL_DEADLINE_S,
                          env={**env, **(uv_env or {}), "PATH": str(bin_dir)})
    assert done.returncode == 0, done.stdout + done.stderr
    version = subprocess.run([str(checkout / ".venv" / "bin" / "benchfleet"), "--version"],
                             capture_output=True, text=True, timeout=60)
    assert version.returncode == 0 and "0.1.0" in version.stdout, version.stderr
    return checkout, done.stdout.splitlines()


@pytest.mark.skipif(not (DEBIAN_PYTHON.exists() and
                         Path("/usr/lib/python3.11/EXTERNALLY-MANAGED").exists()),
                    reason="needs Debian 12's own python3.11, whose pip refuses (PEP 668)")
def test_debian_python_whose_pip_refuses_the_system(tmp_path: Path) -> None:
    checkout, out = install_with(DEBIAN_PYTHON, tmp_path)
    uv_pin = pinned("UV_VERSION")
    assert (f"install.sh: {DEBIAN_PYTHON} -m pip install --quiet --disable-pip-version-check "
            f"--target .uv uv=={uv_pin}") in out
    assert (checkout / ".venv" / "bin" / "python").resolve() == DEBIAN_PYTHON.resolve()


def test_python_without_pip(tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True,
                   timeout=60)
    checkout, out = install_with(bare / "bin" / "python3", tmp_path)
    assert any(line.startswith(f"install.sh: fetch {pinned('PIP_WHEEL')} from PyPI")
               for line in out), out
    assert (checkout / ".uv" / "bin" / "uv").exists()


PYENV = Path.home() / ".pyenv" / "versions"


def pyenv_python(minor: str) -> Path | None:
    found = sorted(PYENV.glob(f"{minor}.*/bin/python{minor}"))
    return found[-1] if found else None


def python_downloads(python: Path, tmp_path: Path) -> Path:
    """What uv's Python downloads give, made of an installed CPython, and the JSON that tells uv
    to fetch it from this disk: the same `uv python install` as on a user's machine, only the
    source of the archive differs (no download server is reachable here)."""
    prefix = python.parents[1]
    archive = tmp_path / "cpython.tar.gz"
    with tarfile.open(archive, "w:gz", compresslevel=1) as tar:
        tar.add(prefix, arcname="python",
                filter=lambda entry: None if "/test/" in entry.name + "/" else entry)
    major, minor, patch = prefix.name.split(".")
    key = f"cpython-{prefix.name}-linux-{platform.machine()}-gnu"
    listing = {key: {"name": "cpython", "arch": {"family": platform.machine(), "variant": None},
                     "os": "linux", "libc": "gnu", "major": int(major), "minor": int(minor),
                     "patch": int(patch), "prerelease": "", "variant": None,
                     "url": archive.as_uri(),
                     "sha256": hashlib.sha256(archive.read_bytes()).hexdigest()}}
    (tmp_path / "downloads.json").write_text(json.dumps(listing))
    return tmp_path / "downloads.json"


@pytest.mark.skipif(not (pyenv_python("3.10") and pyenv_python("3.12")),
                    reason="needs a CPython 3.10 to start from, and a 3.12 for uv to download")
def test_old_python_gets_a_python_from_uv(tmp_path: Path) -> None:
    old, served = pyenv_python("3.10"), pyenv_python("3.12")
    assert old and served
    downloads = python_downloads(served, tmp_path)
    managed = tmp_path / "managed"
    checkout, out = install_with(old, tmp_path, {"UV_PYTHON_DOWNLOADS_JSON_URL": str(downloads),
                                                 "UV_PYTHON_INSTALL_DIR": str(managed)})
    assert "install.sh: .uv/bin/uv python install --no-bin 3.12" in out
    venv_python = (checkout / ".venv" / "bin" / "python").resolve()
    assert venv_python.is_relative_to(managed), venv_python
