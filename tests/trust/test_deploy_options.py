"""`deploy install` refuses, before it connects anywhere, a worker that would reach Redis
without a password, and settings it cannot write; it warns when the worker would build
nothing. The URL's password never appears in what it says."""

import os
import subprocess
import sys

import pytest

SECRET = "deploy-opt-pw-93d1"


def deploy(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BENCHFLEET_")}
    return subprocess.run([sys.executable, "-m", "runner.cli", "deploy", "install",
                           "root@192.0.2.1", "--backend", "cuda", *args], capture_output=True,
                          text=True, env=env, timeout=60)


def test_a_redis_url_without_a_password_is_refused() -> None:
    done = deploy("--redis-url", "redis://192.0.2.1:6379/0")
    assert done.returncode == 2
    assert "the Redis URL has no password" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize(("pair", "sentence"), [
    ("redis_url=redis://x", "--set 'redis_url=redis://x': name one of"),
    ("idle_load1", "--set 'idle_load1': name one of"),
    ("idle_load1=lots", "setting BENCHFLEET_IDLE_LOAD1: Input should be a valid number")])
def test_settings_deploy_cannot_write_are_refused(pair: str, sentence: str) -> None:
    done = deploy("--redis-url", f"redis://:{SECRET}@192.0.2.1:6379/0", "--set", pair)
    assert done.returncode == 2 and sentence in done.stderr, done.stderr
    assert SECRET not in done.stderr + done.stdout


def test_no_allow_repo_warns_before_connecting() -> None:
    done = deploy("--redis-url", f"redis://:{SECRET}@192.0.2.1:6379/0", "--port", "1",
                  "--known-hosts", "/nonexistent")
    assert "warning: no --allow-repo: the worker builds no repository" in done.stderr
    assert done.returncode == 2 and SECRET not in done.stderr + done.stdout
