"""When install.sh cannot get what it needs, it stops with one sentence saying what is missing and
what to do, and it never reaches for apt-get where that needs a root it does not have."""

from pathlib import Path

from tests.install.fakehost import Host, Python, run_install

AGAIN = "install them (docs/install.md), then run ./install.sh again.\n"


def test_no_python_no_uv_and_no_root(tmp_path: Path) -> None:
    result = run_install(Host(pythons={}, tools=("git", "redis-server")), tmp_path)
    assert result.code == 1
    assert result.err == ("install.sh: missing: python3, and apt-get needs root, and there is no "
                          "sudo to ask; " + AGAIN)
    assert result.calls == []


def test_missing_git_without_root_never_calls_apt(tmp_path: Path) -> None:
    host = Host(pythons={"python3": Python("3.11")}, tools=(), sudo="password")
    result = run_install(host, tmp_path)
    assert result.code == 1
    assert result.err == ("install.sh: missing: git, and apt-get needs root, and there is no sudo "
                          "to ask; " + AGAIN)
    assert result.calls == []


def test_apt_that_leaves_git_missing(tmp_path: Path) -> None:
    host = Host(uid=0, pythons={"python3": Python("3.11")}, tools=("redis-server",))
    result = run_install(host, tmp_path)
    assert result.code == 1
    assert result.err == ("install.sh: missing: git, and the package manager could not install "
                          "them; " + AGAIN)
    assert result.calls == ["apt-get update -qq",
                            "apt-get install -y -qq git"]


def test_no_python_3_11_and_uv_cannot_download_one(tmp_path: Path) -> None:
    host = Host(pythons={"python3": Python("3.10")}, uv="0.13.9", uv_python_install_fails=True)
    result = run_install(host, tmp_path)
    assert result.code == 1
    assert result.err.splitlines()[-1] == (
        "install.sh: uv could not install Python 3.12 (its reason is above); put Python 3.11, "
        "3.12 or 3.13 on PATH, or see docs/install.md for a download mirror, then run "
        "./install.sh again.")
    assert result.calls == ["uv python install --no-bin 3.12"]


def test_unknown_option(tmp_path: Path) -> None:
    result = run_install(Host(), tmp_path, "--tests")
    assert (result.code, result.err) == (2, "install.sh: unknown option --tests; use --test, "
                                            "--dry-run or neither\n")
