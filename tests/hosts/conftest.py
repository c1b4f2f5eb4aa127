"""Namespace hosts with real sshd servers; skipped, with the reason, where they cannot exist."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.hosts.netns import Lab, missing_netns
from tests.hosts.sshd import keygen, missing_sshd


@pytest.fixture(scope="session")
def hosts_possible() -> None:
    reason = missing_netns() or missing_sshd()
    if reason:
        pytest.skip(reason)


@pytest.fixture(scope="session")
def client_key(hosts_possible: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The key the coordinator (and every worker, for the store) logs in with."""
    return keygen(tmp_path_factory.mktemp("client") / "id_ed25519")


@pytest.fixture(scope="session")
def wheel_cache(hosts_possible: None) -> Path:
    """The coordinator's wheelhouse, filled from this machine's namespace (which reaches the
    registry) for hosts of this machine's platform; the coordinator namespace reaches none."""
    import subprocess
    import sys

    from packaging.markers import default_environment

    from deploy import wheelhouse

    cache = Path.home() / ".cache" / "benchfleet" / "wheelhouse"
    cache.mkdir(parents=True, exist_ok=True)
    wheelhouse.own_wheel(cache)
    debug = subprocess.run([sys.executable, "-m", "pip", "debug", "--verbose"],
                           capture_output=True, text=True, timeout=120).stdout
    tags = [line.strip() for line in debug.split("Compatible tags:", 1)[1].splitlines()[1:]
            if line.startswith("  ")]
    wheelhouse.download(wheelhouse.pins(default_environment()), tags, cache)
    return cache


@pytest.fixture(scope="module")
def lab(hosts_possible: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    with Lab(tmp_path_factory.mktemp("lab")) as lab:
        yield lab
