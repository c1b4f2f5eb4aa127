"""A host made of small shell scripts on PATH, to ask install.sh what it would do on a Mac or an
Ubuntu box without having one: `uname`, `id`, the pythons, uv, sudo, apt-get and brew answer the
questions install.sh asks, and log every other call so a test sees what really ran."""

import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).parents[2]
# The real tools install.sh uses beside the ones a host fakes.
REAL_TOOLS = ("dirname", "sed", "rm", "mkdir", "env")
BASH = shutil.which("bash") or "/bin/bash"


def pinned(name: str) -> str:
    """A NAME=value setting of install.sh, so a test follows its pins."""
    found = re.search(rf"^{name}=(\S+)", (ROOT / "install.sh").read_text(), re.M)
    assert found, f"install.sh sets no {name}"
    return found[1].strip("\"")


@dataclass
class Python:
    version: str  # "3.10"
    pip: bool = True
    broken: bool = False  # a pyenv shim for a version that is not selected: exits 127


@dataclass
class Host:
    system: str = "Linux"
    uid: int = 1000
    pythons: dict[str, Python] = field(default_factory=dict)
    tools: tuple[str, ...] = ("git", "redis-server")  # present and working
    apt: bool = True
    sudo: str | None = None  # None: no sudo; "nopasswd" answers `sudo -n true`; "password": not
    brew: bool = False
    uv: str | None = None  # the version a uv on PATH reports
    uv_python_install_fails: bool = False


@dataclass
class Result:
    code: int
    out: list[str]  # install.sh's own lines, without the "install.sh: " prefix
    err: str
    calls: list[str]  # every logged call to a faked command, "name args"
    bin: Path


def script(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


def logged(name: str, log: Path, body: str = "") -> str:
    return f'[ "$1" = --version ] && exit 0\necho "{name} $*" >> {log}\n{body}exit 0\n'


def python_body(py: Python, log: Path) -> str:
    if py.broken:
        return "echo 'pyenv: python: command not found' >&2\nexit 127\n"
    pip = 'echo "pip 24.0"; exit 0' if py.pip else "echo 'No module named pip' >&2; exit 1"
    return f"""case "$1 $2 $3" in
  "-m pip --version") {pip} ;;
esac
[ "$1" = -c ] && {{ echo "{py.version} $0"; exit 0; }}
echo "$0 $*" >> {log}
exit 0
"""


def build(host: Host, tmp: Path) -> tuple[Path, Path]:
    """Lay out the host's bin/ and a checkout holding install.sh and pyproject.toml."""
    bin_dir, checkout, log = tmp / "bin", tmp / "checkout", tmp / "calls.log"
    bin_dir.mkdir(parents=True)
    checkout.mkdir()
    log.touch()
    for name in ("install.sh", "pyproject.toml"):
        shutil.copy(ROOT / name, checkout / name)
    for tool in REAL_TOOLS:
        (bin_dir / tool).symlink_to(shutil.which(tool) or f"/usr/bin/{tool}")
    script(bin_dir / "uname", f'echo "{host.system}"\n')
    script(bin_dir / "id", f'echo "{host.uid}"\n')
    for name, py in host.pythons.items():
        script(bin_dir / name, python_body(py, log))
    for tool in host.tools:
        script(bin_dir / tool, logged(tool, log))
    if host.apt:
        script(bin_dir / "apt-get", logged("apt-get", log))
    if host.brew:
        script(bin_dir / "brew", logged("brew", log))
    if host.sudo:
        answer = "0" if host.sudo == "nopasswd" else "1"
        ask = f'[ "$1 $2" = "-n true" ] && exit {answer}\n'
        script(bin_dir / "sudo", ask + logged("sudo", log))
    if host.uv:
        fails = "1" if host.uv_python_install_fails else "0"
        script(bin_dir / "uv", f"""[ "$1" = --version ] && {{ echo "uv {host.uv} (fake)"; exit 0; }}
echo "uv $*" >> {log}
[ "$1 $2" = "python install" ] && {{ echo "error: no download reachable" >&2; exit {fails}; }}
exit 0
""")
    return bin_dir, checkout


def run_install(host: Host, tmp: Path, *args: str) -> Result:
    bin_dir, checkout = build(host, tmp)
    done = subprocess.run([BASH, str(checkout / "install.sh"), *args], capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=30,
                          env={"PATH": str(bin_dir), "HOME": str(tmp)})
    lines = [line.removeprefix("install.sh: ") for line in done.stdout.splitlines()]
    calls = (tmp / "calls.log").read_text().splitlines()
    return Result(done.returncode, lines, done.stderr, calls, bin_dir)
