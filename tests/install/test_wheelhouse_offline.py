"""A coordinator that reaches no registry still deploys from its wheelhouse: wheels fetched once
for one platform tag serve a host whose pip names another tag first (this machine's Python lists
linux_x86_64 first, Debian's python3 manylinux_2_36), and nothing goes to the registry."""

import base64
import hashlib
import os
import zipfile
from pathlib import Path

import pytest

from deploy import wheelhouse
from jobs.errors import UserError

HOST_TAGS = ["cp311-cp311-manylinux_2_36_x86_64", "cp311-cp311-manylinux_2_17_x86_64",
             "py3-none-any"]


def pure_wheel(folder: Path, name: str, version: str) -> Path:
    """The smallest wheel pip accepts: METADATA, WHEEL and a RECORD of both."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}-{version}-py3-none-any.whl"
    info = f"{name}-{version}.dist-info"
    files = {f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                              "Tag: py3-none-any\n"}
    record = "".join(f"{p},sha256={_digest(t)},{len(t)}\n" for p, t in files.items())
    record += f"{info}/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as z:
        for p, t in {**files, f"{info}/RECORD": record}.items():
            z.writestr(p, t)
    return path


def _digest(text: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()


@pytest.fixture
def no_registry(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """pip as a coordinator without a network sees it: an index that does not exist."""
    monkeypatch.setenv("PIP_INDEX_URL", (tmp_path / "no-index").as_uri())
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", "")
    monkeypatch.setenv("PIP_FIND_LINKS", "")
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)


def test_a_host_of_another_first_tag_is_served_from_the_wheelhouse(tmp_path: Path,
                                                                    no_registry: None) -> None:
    cache = tmp_path / "wheelhouse"
    pure_wheel(cache / "cp311" / "linux_x86_64", "benchfleet_probe", "1.0")
    got = wheelhouse.download(["benchfleet_probe==1.0"], HOST_TAGS, cache)
    assert [p.name for p in got] == ["benchfleet_probe-1.0-py3-none-any.whl"]
    assert got[0].parent == cache / "cp311" / "manylinux_2_36_x86_64"


def test_a_wheel_in_no_folder_is_a_clear_error_offline(tmp_path: Path, no_registry: None) -> None:
    cache = tmp_path / "wheelhouse"
    pure_wheel(cache / "cp311" / "linux_x86_64", "benchfleet_probe", "1.0")
    with pytest.raises(UserError, match="fetching the host's wheels failed.*needs the package "
                                        "registry once"):
        wheelhouse.download(["benchfleet_probe==2.0"], HOST_TAGS, cache)
