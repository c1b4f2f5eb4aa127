"""A user's mistake ends in located sentences and exit 2, never a traceback."""

from pathlib import Path

import pytest

from runner.redis_server import free_port
from tests.integration.conftest import cli
from workers.fleet.settings import Settings

pytestmark = pytest.mark.integration


def test_bad_sweep_file_lists_each_problem(settings: Settings, tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("name: bad\ntarget: {repo: ./nowhere, commits: main}\nmodels: [m]\n"
                    "backends: {cuda: {build: no-such-build}}\n"
                    "arms:\n  - {name: a, recipe: tinymoe-bench-decode, baseline: true,\n"
                    "     params: {max_tokens: many}}\n")
    done = cli(settings, "submit", str(path))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.splitlines() == [
        f"benchfleet: {path}:4: backends.cuda.build: recipe 'no-such-build' is not in the "
        "catalogue (it has bench-mlxlm, mlxcel-bench-decode, mlxcel-build-cuda, "
        "mlxcel-build-metal, mlxcel-metal-trace, mlxcel-nsys-kernels, tinymoe-bench-decode, "
        "tinymoe-build)",
        f"benchfleet: {path}:7: arms.0.params: parameter 'max_tokens' must be a int, got 'many'",
        f"benchfleet: {path}:2: target.repo: ./nowhere is neither a URL nor a directory "
        f"(looked for {tmp_path / 'nowhere'})"]


def test_missing_file_unknown_sweep_and_unreachable_redis(settings: Settings,
                                                          tmp_path: Path) -> None:
    missing = cli(settings, "submit", str(tmp_path / "none.yaml"))
    assert missing.returncode == 2
    assert missing.stderr.strip() == (f"benchfleet: cannot read sweep file "
                                      f"{tmp_path / 'none.yaml'} (No such file or directory)")
    unknown = cli(settings, "status", "no-such-sweep")
    # Which sentence depends on whether another test has submitted a sweep yet.
    assert unknown.returncode == 2
    assert unknown.stderr in ("benchfleet: 'no-such-sweep' matches 0 sweeps; give more of its "
                              "id\n", "benchfleet: no sweeps in Redis yet; submit one with "
                              "`benchfleet submit`\n")
    closed = settings.model_copy(update={"redis_url": f"redis://127.0.0.1:{free_port()}/0"})
    down = cli(closed, "status")
    assert down.returncode == 2 and "Traceback" not in down.stderr
    assert down.stderr.startswith("benchfleet: cannot reach Redis at BENCHFLEET_REDIS_URL")
