"""A user's mistake ends in located sentences and exit 2, never a traceback."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from runner.demo.redis_server import RedisServer, free_port
from tests.support.fleet import Target, arms, cli, fleet_settings, submit, sweep_file
from workers.shared.settings import Settings
from workers.shared.state import Store

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
        "mlxcel-build-metal, mlxcel-cupti-kernels, mlxcel-metal-trace, mlxcel-nsys-kernels, "
        "tinymoe-bench-decode, "
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


def test_mistakes_in_paths_and_settings_are_sentences(settings: Settings,
                                                      tmp_path: Path) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("not a directory\n")
    cases = {
        ("record", "-o", str(a_file)): None,
        ("init", "moe-decode-gap", "--commit", "main", "-o",
         str(tmp_path / "missing" / "dir" / "s.yaml")): "cannot write",
        ("demo", "--dir", str(a_file / "sub")): "cannot create the demo directory",
    }
    for args, expected in cases.items():
        done = cli(settings, *args)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr and done.stderr.startswith("benchfleet: ")
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
        if expected:
            assert expected in done.stderr
    for url in ("http://127.0.0.1:6379/0", "redis://127.0.0.1:notaport/0", "redis://:s3cret@"):
        bad = settings.model_copy(update={"redis_url": url})
        done = cli(bad, "status")
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert "BENCHFLEET_REDIS_URL" in done.stderr and "s3cret" not in done.stderr


def test_record_onto_a_file_says_so(settings: Settings, tmp_path: Path) -> None:
    from tests.support.fleet import arms, submit, sweep_file

    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    spec = {"name": "onto-file", "target": {"repo": str(tmp_path), "commits": "0" * 40},
            "models": ["m"], "backends": {"nowhere": {"build": "tinymoe-build"}},
            "arms": arms("only"), "n": 1}
    from runner.demo.target_repo import commit_all, git

    git(tmp_path, "init", "--quiet")
    commit_all(tmp_path, "one commit")
    spec["target"]["commits"] = git(tmp_path, "rev-parse", "HEAD")  # type: ignore[index]
    sweep_id = submit(settings, sweep_file(tmp_path, spec), "--wait-for-worker")
    done = cli(settings, "record", sweep_id, "-o", str(a_file))
    assert done.returncode == 2 and done.stderr.strip() == (
        f"benchfleet: {a_file} is a file; give -o a directory for the record")


def test_ctrl_c_while_the_cli_starts_is_a_sentence() -> None:
    # The interrupt lands after runner.cli is imported and before main() runs: the window in
    # which click and the rest of the start-up import.
    program = ("import os, signal, time\nimport runner.cli\n"
               "os.kill(os.getpid(), signal.SIGINT)\ntime.sleep(30)\n")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 130
    assert done.stderr == "benchfleet: interrupted; stopped what it had started\n"


def test_a_full_redis_is_named_full_not_a_password(settings: Settings, target: Target,
                                                  tmp_path: Path) -> None:
    with RedisServer(tmp_path / "redis") as server:
        client = redis.Redis.from_url(server.url)
        client.config_set("maxmemory-policy", "noeviction")
        client.config_set("maxmemory", "1")  # below what an empty Redis uses: no write fits
        full = settings.model_copy(update={"redis_url": server.url})
        spec = {"name": "full", "target": {"repo": str(target.repo), "commits": "main"},
                "models": ["tinymoe-a3"], "backends": {"cpu": {"build": "tinymoe-build"}},
                "arms": arms("gather"), "n": 1}
        done = cli(full, "submit", "--wait-for-worker", str(sweep_file(tmp_path, spec)))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "is full" in done.stderr and "maxmemory" in done.stderr
    assert "password" not in done.stderr


def test_status_says_not_finished_while_cells_wait_even_after_a_cancel(
        settings: Settings, store: Store, target: Target, tmp_path: Path) -> None:
    # No worker serves this backend, so the cells stay queued; one of them is cancelled.
    spec = {"name": "unserved", "target": {"repo": str(target.repo), "commits": "main"},
            "models": ["tinymoe-a3"], "backends": {"nobody": {"build": "tinymoe-build"}},
            "arms": arms("gather", "fused"), "n": 1}
    sweep_id = submit(settings, sweep_file(tmp_path, spec), "--wait-for-worker")
    _, cells, _ = store.sweep(sweep_id)
    assert cli(settings, "cancel", sweep_id, cells[0].id).returncode == 0
    status = cli(settings, "status", sweep_id, "--json")
    assert json.loads(status.stdout)["states"] == {"cancelled": 1, "queued": 1}
    assert status.returncode == 3  # not finished outranks failed (docs/cli.md)
    assert cli(settings, "cancel", sweep_id, cells[1].id).returncode == 0
    assert cli(settings, "status", sweep_id).returncode == 1  # ended, and not all done


def test_a_redis_out_of_connections_is_named_by_its_maxclients(settings: Settings,
                                                             tmp_path: Path) -> None:
    with RedisServer(tmp_path / "redis") as server:
        holder = redis.Redis.from_url(server.url)
        holder.config_set("maxclients", "1")  # this connection is the one it allows
        done = cli(settings.model_copy(update={"redis_url": server.url}), "status")
        holder.config_set("maxclients", "10000")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "maxclients" in done.stderr and "start redis-server" not in done.stderr


def test_sentinels_that_name_no_primary_are_a_sentence(tmp_path: Path) -> None:
    nobody = fleet_settings(tmp_path, f"sentinel://127.0.0.1:{free_port()}/benchfleet")
    down = cli(nobody, "sweeps")
    assert down.returncode == 2 and "Traceback" not in down.stderr, down.stderr
    assert down.stderr.startswith("benchfleet: no sentinel in BENCHFLEET_REDIS_URL (sentinel://"
                                  "127.0.0.1:"), down.stderr


def test_a_signing_key_set_to_the_public_file_is_a_sentence(settings: Settings, target: Target,
                                                            tmp_path: Path) -> None:
    swapped = settings.model_copy(update={"signing_key": settings.verify_key})
    spec = {"name": "swapped", "target": {"repo": str(target.repo), "commits": "main"},
            "models": ["tinymoe-a3"], "backends": {"cpu": {"build": "tinymoe-build"}},
            "arms": arms("gather"), "n": 1}
    done = cli(swapped, "submit", str(sweep_file(tmp_path, spec)))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr == (f"benchfleet: {settings.verify_key} is a public key; "
                           "BENCHFLEET_SIGNING_KEY needs the private one (coordinator.pem), "
                           "and only workers take the public one\n")
