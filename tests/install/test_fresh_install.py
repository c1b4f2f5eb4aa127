"""install.sh for real, in a copy of this checkout, with nothing on PATH but one python3 and the
system tools: Debian's own python3 (its pip refuses to touch the system: PEP 668), and a python3
with no pip at all (Debian and Ubuntu as installed). Each fetches uv from PyPI and ends with a
working `benchfleet` in .venv, built from uv.lock."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.install.fakehost import BASH, ROOT, pinned

pytestmark = pytest.mark.integration
TOOLS = ("dirname", "sed", "rm", "mkdir", "env", "uname", "id", "git", "redis-server")
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


def install_with(python3: Path, tmp_path: Path) -> tuple[Path, list[str]]:
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
                          env={**env, "PATH": str(bin_dir)})
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
