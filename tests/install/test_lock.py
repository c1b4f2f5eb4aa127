"""uv.lock is the dependency set: it agrees with pyproject.toml, the worker requirements that deploy
builds its wheelhouse from are exported from it unchanged, and it has wheels for every host we
install on, so no host ever builds a dependency from source."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.install.fakehost import ROOT

WORKER_REQUIREMENTS = ROOT / "deploy" / "worker-requirements.txt"
EXPORT_WORKER = ("export", "--frozen", "--no-dev", "--extra", "worker", "--no-emit-project")
# (uv's --python-platform, Python) for GB10 and CI Linux, and Apple silicon on macOS 14 (mlx's
# oldest), for the Pythons install.sh accepts.
HOSTS = [(platform, python)
         for platform in ("aarch64-manylinux_2_35", "x86_64-manylinux_2_35", "aarch64-apple-darwin")
         for python in ("3.11", "3.12", "3.13")]


def uv(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The uv install.sh used: the one it fetched into .uv, else the one on PATH."""
    fetched = ROOT / ".uv" / "bin" / "uv"
    binary = str(fetched) if fetched.exists() else shutil.which("uv")
    assert binary, "no uv: run ./install.sh first"
    return subprocess.run([binary, *args], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def test_lock_agrees_with_pyproject() -> None:
    done = uv("lock", "--check", "--offline")
    assert done.returncode == 0, f"{done.stderr}uv.lock is out of date: run `uv lock`"


def test_worker_requirements_are_the_lock_exported() -> None:
    done = uv(*EXPORT_WORKER)
    assert done.returncode == 0, done.stderr
    assert WORKER_REQUIREMENTS.read_text() == done.stdout, (
        f"{WORKER_REQUIREMENTS.relative_to(ROOT)} has drifted from uv.lock: run "
        f"`uv {' '.join(EXPORT_WORKER)} > {WORKER_REQUIREMENTS.relative_to(ROOT)}`")


def test_worker_requirements_leave_out_the_coordinators_plots() -> None:
    names = {line.split("==")[0] for line in WORKER_REQUIREMENTS.read_text().splitlines()
             if line and line[0].isalpha()}
    assert {"celery", "asyncssh", "numpy"} <= names
    assert "matplotlib" not in names and "fabric" not in names


@pytest.mark.parametrize(("platform", "python"), HOSTS)
def test_every_locked_package_has_a_wheel_for(platform: str, python: str,
                                              tmp_path: Path) -> None:
    everything = tmp_path / "all.txt"
    exported = uv("export", "--frozen", "--no-dev", "--all-extras", "--no-emit-project")
    everything.write_text(exported.stdout)
    done = uv("pip", "install", "--dry-run", "--no-deps", "--only-binary", ":all:",
              "--python-platform", platform, "--python-version", python,
              "--target", str(tmp_path / "target"), "-r", str(everything),
              env={"MACOSX_DEPLOYMENT_TARGET": "14.0"})
    assert done.returncode == 0, done.stderr
