"""`benchfleet --version` and `--help` start fast: they import none of what the subcommands
need, and the listing `--help` prints without importing them says what their own help says."""

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from runner import __version__
from runner.commands import COMMANDS

ROOT = Path(__file__).parents[2]
# What a command pays for only when it runs: Redis, the models, the plots, the workers.
HEAVY = {"redis", "pydantic", "matplotlib", "celery", "rich", "yaml", "numpy", "workers"}


def imported_by(*args: str) -> tuple[set[str], str]:
    """The top-level modules (and importlib.metadata) a fresh process imported, and stdout."""
    program = ("import contextlib, io, json, sys\nfrom runner import cli\nout = io.StringIO()\n"
               "with contextlib.redirect_stdout(out):\n"
               f"    code = cli.main({list(args)!r})\n"
               "names = {m.split('.')[0] for m in sys.modules}\n"
               "names |= {m for m in sys.modules if m == 'importlib.metadata'}\n"
               "print(json.dumps([code, sorted(names), out.getvalue()]))\n")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          cwd=ROOT, timeout=60, check=True)
    code, names, out = json.loads(done.stdout)
    assert code == 0, done.stderr
    return set(names), out


def test_version_imports_nothing_it_does_not_print() -> None:
    names, out = imported_by("--version")
    assert out == f"benchfleet, version {__version__}\n"
    assert not names & (HEAVY | {"click", "importlib.metadata"})


def test_help_lists_every_command_without_importing_any() -> None:
    names, out = imported_by("--help")
    assert not names & (HEAVY | {"importlib.metadata"}), names & HEAVY
    listed = [line.split()[0] for line in out.split("Commands:\n")[1].splitlines()]
    assert listed == list(COMMANDS)


@pytest.mark.parametrize("name", list(COMMANDS))
def test_each_listed_summary_is_the_first_sentence_of_its_help(name: str) -> None:
    module = __import__(f"runner.commands.{name}", fromlist=["command"])
    assert COMMANDS[name] == module.command.get_short_help_str(limit=10**6)


def test_the_version_is_the_package_version() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert __version__ == project["version"]


def test_status_imports_no_sweep_or_cell_model() -> None:
    # status reads states and the compact rows, never a cell: the sweep's and cells' models
    # (some 25 ms of its start on a slow machine) are imported where a sweep is read.
    program = ("import sys\nimport runner.commands.status\n"
               "print(sorted({'jobs.spec.cells', 'jobs.spec.sweep', 'jobs.spec.recipes'}"
               " & set(sys.modules)))\n")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          cwd=ROOT, timeout=60, check=True)
    assert done.stdout.strip() == "[]", done.stdout
