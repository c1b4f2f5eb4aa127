"""What `install.sh --dry-run` would run on the hosts our users have, faked on PATH: which Python
it picks, how it gets uv, and when it reaches for apt-get, sudo or Homebrew."""

from pathlib import Path

from tests.install.fakehost import Host, Python, Result, pinned, run_install

UV_VERSION = pinned("UV_VERSION")
PIP_WHEEL = pinned("PIP_WHEEL")
INSTALL_UV = f"install --quiet --disable-pip-version-check --target .uv uv=={UV_VERSION}"
FETCH_UV_WITH_PIP = f"-m pip {INSTALL_UV}"
NO_PYTHON = "no Python 3.11 to 3.13 on PATH (only Python {version} at {path}), so uv installs " \
            "Python 3.12"
SYNC = "sync --locked --compile-bytecode --python {python} --extra coordinator --extra worker"
UV = ".uv/bin/uv"
APT = "env DEBIAN_FRONTEND=noninteractive apt-get"


def plan(tmp_path: Path, host: Host, *args: str) -> Result:
    result = run_install(host, tmp_path, "--dry-run", *args)
    assert result.code == 0, result.err
    assert result.calls == [], "a dry run changed nothing, yet it called " + repr(result.calls)
    return result


def macos_clt(**changes: object) -> Host:
    """A Mac with only the Command Line Tools: /usr/bin/python3 is 3.9 with pip, git, no brew."""
    host = Host(system="Darwin", uid=501, pythons={"python3": Python("3.9")}, tools=("git",),
                apt=False)
    for name, value in changes.items():
        setattr(host, name, value)
    return host


def ubuntu_2204(**changes: object) -> Host:
    """Ubuntu 22.04 as installed: python3 is 3.10 without pip (python3-pip is apart)."""
    host = Host(pythons={"python3": Python("3.10", pip=False)}, tools=("git",))
    for name, value in changes.items():
        setattr(host, name, value)
    return host


def test_macos_with_only_the_command_line_tools(tmp_path: Path) -> None:
    result = plan(tmp_path, macos_clt())
    python3 = result.bin / "python3"
    assert result.out == [
        "rm -rf .uv",
        f"{python3} {FETCH_UV_WITH_PIP}",
        NO_PYTHON.format(version="3.9", path=python3),
        f"{UV} python install --no-bin 3.12",
        f"{UV} {SYNC.format(python='3.12')}",
        "note: redis-server is not installed (there is no Homebrew (https://brew.sh)): a worker "
        "does not need it; the coordinator and `benchfleet demo` do (docs/install.md).",
    ]


def test_macos_with_homebrew_gets_redis_from_it(tmp_path: Path) -> None:
    result = plan(tmp_path, macos_clt(brew=True), "--test")
    assert result.out[0] == "brew install redis"
    assert result.out[-1] == f"{UV} {SYNC.format(python='3.12')} --extra test"


def test_macos_tests_need_redis_and_say_so(tmp_path: Path) -> None:
    result = run_install(macos_clt(), tmp_path, "--dry-run", "--test")
    assert result.code == 1
    assert result.err == ("install.sh: missing: redis-server, and there is no Homebrew "
                          "(https://brew.sh); install them (docs/install.md), then run "
                          "./install.sh again.\n")


def test_ubuntu_2204_as_root_takes_apt_for_redis_and_uv_for_python(tmp_path: Path) -> None:
    result = plan(tmp_path, ubuntu_2204(uid=0))
    python3 = result.bin / "python3"
    assert result.out == [
        f"{APT} update -qq",
        f"{APT} install -y -qq redis-server",
        "rm -rf .uv",
        f"fetch {PIP_WHEEL} from PyPI into .uv ({python3} has no pip), sha256-checked",
        f"{python3} .uv/{PIP_WHEEL}/pip {INSTALL_UV}",
        NO_PYTHON.format(version="3.10", path=python3),
        f"{UV} python install --no-bin 3.12",
        f"{UV} {SYNC.format(python='3.12')}",
    ]


def test_ubuntu_2204_with_sudo_asks_sudo(tmp_path: Path) -> None:
    result = plan(tmp_path, ubuntu_2204(sudo="nopasswd"))
    assert result.out[:2] == [
        f"sudo {APT} update -qq",
        f"sudo {APT} install -y -qq redis-server",
    ]


def test_no_sudo_leaves_apt_alone_and_says_what_is_missing(tmp_path: Path) -> None:
    for sudo in (None, "password"):  # a sudo that would ask, with no terminal to ask on
        result = plan(tmp_path / str(sudo), ubuntu_2204(sudo=sudo))
        assert not any("apt-get" in line.split(" (")[0] for line in result.out), result.out
        assert result.out[-1] == (
            "note: redis-server is not installed (apt-get needs root, and there is no sudo to "
            "ask): a worker does not need it; the coordinator and `benchfleet demo` do "
            "(docs/install.md).")


def test_linux_without_apt_says_so(tmp_path: Path) -> None:
    result = plan(tmp_path, ubuntu_2204(apt=False, uid=0))
    assert result.out[-1].startswith("note: redis-server is not installed (this system has "
                                      "neither apt-get nor Homebrew)")


def test_ubuntu_2204_prefers_a_python3_11_already_on_path(tmp_path: Path) -> None:
    pythons = {"python3": Python("3.10"), "python3.11": Python("3.11", pip=False)}
    result = plan(tmp_path, ubuntu_2204(pythons=pythons, tools=("git", "redis-server")))
    python311 = result.bin / "python3.11"
    assert result.out == [
        "rm -rf .uv",
        f"fetch {PIP_WHEEL} from PyPI into .uv ({python311} has no pip), sha256-checked",
        f"{python311} .uv/{PIP_WHEEL}/pip {INSTALL_UV}",
        f"Python 3.11: {python311}",
        f"{UV} {SYNC.format(python=python311)}",
    ]


def test_order_of_choice_python3_then_the_newest_named(tmp_path: Path) -> None:
    cases = {
        "first": ({"python3": Python("3.12"), "python3.11": Python("3.11")}, "python3"),
        "named": ({"python3": Python("3.10"), "python3.11": Python("3.11"),
                   "python3.12": Python("3.12")}, "python3.12"),
        "too-new": ({"python3": Python("3.14"), "python3.13": Python("3.13")}, "python3.13"),
        "shim": ({"python3": Python("3.9"), "python3.12": Python("3.12", broken=True),
                  "python3.11": Python("3.11")}, "python3.11"),
    }
    for case, (pythons, chosen) in cases.items():
        result = plan(tmp_path / case, Host(pythons=pythons, uv=UV_VERSION))
        assert result.out == [f"Python {pythons[chosen].version}: {result.bin / chosen}",
                              f"{result.bin / 'uv'} {SYNC.format(python=result.bin / chosen)}"]


def test_debian_12_without_root_uses_its_python_and_its_pip(tmp_path: Path) -> None:
    result = plan(tmp_path, Host(pythons={"python3": Python("3.11")}, apt=True))
    python3 = result.bin / "python3"
    assert result.out == ["rm -rf .uv", f"{python3} {FETCH_UV_WITH_PIP}",
                          f"Python 3.11: {python3}", f"{UV} {SYNC.format(python=python3)}"]


def test_a_uv_on_path_is_used_only_when_new_enough(tmp_path: Path) -> None:
    pythons = {"python3": Python("3.12")}
    fresh = plan(tmp_path / "fresh", Host(pythons=pythons, uv="0.13.0"))
    assert "rm -rf .uv" not in fresh.out
    old = plan(tmp_path / "old", Host(pythons=pythons, uv="0.4.30"))
    assert old.out[:2] == ["rm -rf .uv", f"{old.bin / 'python3'} {FETCH_UV_WITH_PIP}"]
