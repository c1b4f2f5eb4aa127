"""benchfleet's configuration, in one place: environment variables prefixed BENCHFLEET_."""

import json
import re
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit, urlunsplit

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict
from pydantic_settings.exceptions import SettingsError

from jobs.errors import UserError
from workers.shared.redis_client import FORM, SENTINEL, parse_sentinel

_DATA = Path.home() / ".local" / "share" / "benchfleet"
_REDIS_SCHEMES = ("redis", "rediss", "unix", SENTINEL)
# A list in the environment: a JSON list, or words separated by commas (`gpu=gb10,nvlink`).
ListSetting = Annotated[list[str], NoDecode]


class SftpUrl(str):
    """`sftp://USER@HOST[:PORT]/PATH`: an artifact store on a storage host (see stores/sftp.py).
    A str, so it travels through the environment as written; Path() would collapse its `//`."""


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="BENCHFLEET_", arbitrary_types_allowed=True)

    # One Redis server, or the primary Redis Sentinel names:
    # sentinel://[:PASSWORD@]HOST:PORT[,HOST:PORT...]/SERVICE[/DB] (workers/shared/redis_client.py).
    redis_url: str = "redis://127.0.0.1:6379/0"
    # A local directory, or sftp://USER@HOST[:PORT]/PATH (`/~/PATH`: under the login's home).
    artifacts: Path | SftpUrl = _DATA / "artifacts"
    # Where an SFTP store keeps a worker's staged attempts and the coordinator's verified copies.
    # The history index (SQLite), rebuilt from the artifact store whenever it is missing.
    history_db: Path = _DATA / "history.sqlite"
    # Step thresholds per testbed for history, regressions and publish (docs/history.md).
    history_thresholds: Path | None = None
    artifact_cache: Path = Path.home() / ".cache" / "benchfleet" / "artifacts"
    workspace: Path = Path.home() / ".cache" / "benchfleet" / "workspace"
    models_dir: Path = Path("models")
    catalogue: Path | None = None
    # This host's name in the fleet; deploy writes it. Network-namespace test hosts share one
    # hostname, so identity is a setting, never socket.gethostname() alone.
    host: str | None = None
    # This worker's testbed in history: by default a fingerprint of its host's stable facts
    # (jobs/trends/fingerprint.py). Name one to say "this GPU swap is a new testbed" (a new
    # name) or "these two hosts are one" (the same name on both).
    testbed: str | None = None
    # Capability tags a worker offers beyond its backend (`gpu=gb10`, `model:NAME` is added
    # for every checkpoint found in MODELS_DIR). A JSON list, or comma-separated.
    tags: ListSetting = []
    # Ed25519 keys (PEM): the coordinator signs cell envelopes with the private key; workers
    # hold only the public key and run nothing that it does not verify.
    signing_key: Path | None = None
    verify_key: Path | None = None
    # Target repositories a worker agrees to build (URLs or absolute paths; a JSON list, or
    # comma-separated). Empty means "only what the demo and tests create under the
    # workspace's parent".
    allowed_repos: ListSetting = []
    # The host lease: one measured command or build per host at a time, across all its workers.
    host_lock: Path = Path.home() / ".cache" / "benchfleet" / "host.lock"
    # The idle gate before a group's first run and after a gap between commands.
    idle_load1: float = 0.6
    idle_max_wait_s: float = 600.0
    idle_gap_s: float = 300.0
    idle_interval_s: float = 5.0
    # NVIDIA hosts: lock the GPU clocks for each group (`nvidia-smi -lgc MIN,MAX`, in MHz;
    # root only) and reset them after it. Unset: clocks left as they are, and recorded.
    gpu_lock_clocks: str | None = None
    # NVIDIA hosts: the wait after a command before the next run's "before" reading, so NVML's
    # utilisation (an average over its last sample period, up to 1 s) no longer shows it.
    gpu_settle_s: float = Field(default=1.0, ge=0.0, le=10.0)
    # Celery task events (Flower, `celery events`): at cell start and end only.
    events: bool = True
    # Longest a cell's checkout (git clone or fetch) and provenance probes may take.
    setup_timeout_s: float = 600.0
    # Added to a step's own timeout in its lease: time to notice a command's end and renew.
    lease_margin_s: float = 15.0
    # A cell may be started this many times before a lost worker fails it for good.
    max_attempts: int = 3
    # A published message still missing from its queue this long after is lost: queue again.
    lost_after_s: float = 30.0
    # `benchfleet fleet up`: where this machine's own fleet keeps its Redis, keys and workers.
    fleet_dir: Path = Path.home() / ".benchfleet" / "fleet"
    # The SSH key the SFTP artifact store authenticates with (an sftp:// BENCHFLEET_ARTIFACTS).
    ssh_key: Path | None = None
    # The known_hosts file that names the storage host's key (default: ~/.ssh/known_hosts).
    ssh_known_hosts: Path | None = None

    @field_validator("tags", "allowed_repos", mode="before")
    @classmethod
    def _list(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        text = value.strip()
        if not text.startswith("["):
            return [word.strip() for word in text.split(",") if word.strip()]
        try:
            return json.loads(text)
        except ValueError:
            raise ValueError(f"{value!r} opens a JSON list but is not one; write it as "
                             '["a", "b"] or as a,b') from None

    @field_validator("redis_url")
    @classmethod
    def _redis_url(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in _REDIS_SCHEMES:
            raise ValueError(f"{redacted(value)!r} is not a Redis URL; use "
                             "redis://[:PASSWORD@]HOST:PORT/DB, rediss:// for TLS, or "
                             f"{FORM} for Redis Sentinel")
        if parts.scheme == SENTINEL:
            try:
                parse_sentinel(value)
            except ValueError as error:
                raise ValueError(f"{redacted(value)!r}: {error}") from None
            return value
        try:
            parts.port  # noqa: B018 - a malformed port raises here, not deep inside redis-py
        except ValueError:
            raise ValueError(f"{redacted(value)!r} has a port that is not a number") from None
        if parts.scheme != "unix" and not parts.hostname:
            raise ValueError(f"{redacted(value)!r} names no host; use "
                             "redis://[:PASSWORD@]HOST:PORT/DB")
        return value

    @field_validator("gpu_lock_clocks")
    @classmethod
    def _gpu_lock_clocks(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"\d+(,\d+)?", value):
            raise ValueError(f"{value!r} is not a clock range; use MIN,MAX in MHz (1980,1980)")
        return value

    @field_validator("artifacts", mode="before")
    @classmethod
    def _artifacts(cls, value: Any) -> Any:
        if not str(value).startswith("sftp:"):
            return Path(value) if isinstance(value, str) else value
        parts = urlsplit(str(value))
        if parts.password is not None:
            raise ValueError("an sftp:// store takes no password in its URL; name a key in "
                             "BENCHFLEET_SSH_KEY")
        if not parts.hostname or not parts.username or len(parts.path) < 2:
            raise ValueError(f"{value!r} is not an SFTP store; use sftp://USER@HOST[:PORT]/PATH")
        if _port(str(value)) is None and parts.netloc.rsplit("@", 1)[-1].count(":"):
            raise ValueError(f"{value!r} has a port that is not a number")
        return SftpUrl(value)


def load_settings(**overrides: object) -> Settings:
    """The settings from the environment; a bad value is the user's to fix, in one sentence."""
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except SettingsError as error:  # a value the environment source could not decode
        raise UserError(f"{error}; see the settings in docs/settings.md") from None
    except ValidationError as error:
        first = error.errors()[0]
        name = f"BENCHFLEET_{str(first['loc'][0]).upper()}"
        raise UserError(f"setting {name}: {str(first['msg']).removeprefix('Value error, ')}"
                        ) from None


def redacted(url: str) -> str:
    """A URL fit for a message: its password (and user) replaced by ***."""
    parts = urlsplit(url)
    if parts.password is None and parts.username is None:
        return url
    return urlunsplit(parts._replace(netloc=f"***@{parts.netloc.rpartition('@')[2]}"))


def _port(url: str) -> int | None:
    try:
        return urlsplit(url).port
    except ValueError:
        return None
