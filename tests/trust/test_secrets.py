"""Secrets stay with the worker: a fleet on a TLS-only Redis with a password, workers whose
environment holds tokens and keys, a sweep run to a record — and then every log, artifact,
status output, record file and Redis value is searched for each secret. Commands see the
worker's secrets only when their recipe names them (`pass_env`)."""

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis

from tests.support.fleet import arms, wait
from tests.trust.conftest import PASSWORD, SECRETS, Fleet, trust_fleet
from tests.trust.tls import tls_redis
from workers.shared.settings import redacted

SECRET_VALUES = [PASSWORD, *SECRETS.values()]


@dataclass
class Run:
    fleet: Fleet
    sweep_id: str
    passed_id: str  # the sweep whose build names HF_TOKEN in pass_env
    outputs: dict[str, str]  # CLI command -> what it printed


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    root = tmp_path_factory.mktemp("secrets")
    with tls_redis(root / "redis", PASSWORD) as url, \
            trust_fleet(root, [("cpu", "vault")], redis_url=url) as fleet:
        path = fleet.sweep_file("secret", backends={"cpu": {"build": "env-dump-build"}},
                                arms=arms("gather", "fused"), n=3)
        sweep_id = fleet.submit(path)
        passed_id = fleet.submit(fleet.sweep_file(
            "passed", backends={"cpu": {"build": "pass-env-build"}}))
        wait(fleet.store, sweep_id)
        wait(fleet.store, passed_id)
        outputs = {}
        record = root / "record"
        for args in (["status", sweep_id], ["sweeps"], ["hosts"], ["hosts", "--json"],
                     ["record", sweep_id, "-o", str(record)]):
            done = fleet.cli(*args)
            outputs[" ".join(args)] = done.stdout + done.stderr
            assert done.returncode == 0, (args, done.stdout, done.stderr)
        (record_json,) = [p for p in record.glob("*.json")]
        done = fleet.cli("check", str(record_json), "--artifacts", str(fleet.settings.artifacts))
        outputs["check"] = done.stdout + done.stderr
        assert done.returncode == 0, done.stdout
        yield Run(fleet, sweep_id, passed_id, outputs)


def _env_dumps(fleet: Fleet, sweep_id: str) -> list[str]:
    """What the `env` step of each attempt's build printed."""
    found = sorted((Path(fleet.settings.artifacts) / sweep_id).glob("*/attempt-*/build/env."
                                                                    "stdout.txt"))
    return [p.read_text() for p in found]


def test_the_fleet_runs_over_tls_and_a_plain_connection_is_refused(run: Run) -> None:
    url = run.fleet.settings.redis_url
    assert url.startswith("rediss://") and "ssl_ca_certs=" in url
    assert {s.status for s in run.fleet.store.states(run.sweep_id).values()} == {"done"}
    plain = url.replace("rediss://", "redis://").split("?")[0]
    with pytest.raises(redis.ConnectionError):
        redis.Redis.from_url(plain, socket_connect_timeout=2, socket_timeout=2).ping()
    refused = run.fleet.cli("status", settings=run.fleet.settings.model_copy(
        update={"redis_url": plain}))
    assert refused.returncode == 2 and "cannot reach Redis" in refused.stderr
    assert redacted(plain) in refused.stderr and PASSWORD not in refused.stderr
    wrong = run.fleet.cli("status", settings=run.fleet.settings.model_copy(
        update={"redis_url": url.replace(PASSWORD, "not-the-password")}))
    assert wrong.returncode == 2 and "refused" in wrong.stderr, wrong.stderr
    assert "not-the-password" not in wrong.stderr


def test_commands_never_see_the_workers_secrets(run: Run) -> None:
    dumps = _env_dumps(run.fleet, run.sweep_id)
    assert len(dumps) >= 1
    for dump in dumps:
        names = {line.split("=", 1)[0] for line in dump.splitlines() if "=" in line}
        assert {"HOME", "PATH"} <= names, "HOME and PATH stay: toolchains need them"
        assert not names & {*SECRETS, "BENCHFLEET_REDIS_URL", "BENCHFLEET_SIGNING_KEY"}, names
        assert not [n for n in names if n.startswith("BENCHFLEET_")], names
        assert not [v for v in SECRET_VALUES if v in dump]


def test_a_recipe_that_names_a_variable_gets_that_one_only(run: Run) -> None:
    (dump,) = _env_dumps(run.fleet, run.passed_id)
    assert f"HF_TOKEN={SECRETS['HF_TOKEN']}" in dump.splitlines()
    assert not [v for v in SECRET_VALUES if v != SECRETS["HF_TOKEN"] and v in dump]


def test_no_secret_in_any_log_artifact_output_record_or_redis_value(run: Run) -> None:
    root = run.fleet.root
    passed = Path(run.fleet.settings.artifacts) / run.passed_id  # HF_TOKEN there by recipe
    searched = 0
    for path in root.rglob("*"):
        named = passed in path.parents or "pass-env-build" in path.parts
        if not path.is_file() or named or path.suffix == ".pem":
            continue
        data = path.read_bytes()
        searched += 1
        leaked = [v for v in SECRET_VALUES if v.encode() in data]
        assert not leaked, f"{path} holds {leaked}"
    assert searched > 50
    for command, output in run.outputs.items():
        assert not [v for v in SECRET_VALUES if v in output], command
    client = run.fleet.store.r
    for key in client.scan_iter(count=500):
        value = _value(client, key)
        if run.passed_id in key:
            continue
        assert not [v for v in SECRET_VALUES if v in value], key
    logs = "".join(p.read_text() for p in (root / "logs").glob("*.log"))
    assert "rediss://:**@127.0.0.1" in logs, "Celery names the broker, password masked"


def _value(client: redis.Redis, key: str) -> str:
    kind = client.type(key)
    if kind == "string":
        return str(client.get(key))
    if kind == "hash":
        return str(client.hgetall(key))
    if kind == "list":
        return str(client.lrange(key, 0, -1))
    if kind in ("set", "zset"):
        return str(client.smembers(key) if kind == "set" else client.zrange(key, 0, -1))
    return ""
