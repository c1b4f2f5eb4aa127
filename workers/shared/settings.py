"""benchfleet's configuration, in one place: environment variables prefixed BENCHFLEET_."""

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from pydantic import ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from jobs.errors import UserError

_DATA = Path.home() / ".local" / "share" / "benchfleet"
_REDIS_SCHEMES = ("redis", "rediss", "unix")


class SftpUrl(str):
    """`sftp://USER@HOST[:PORT]/PATH`: an artifact store on a storage host (see sftp_store).
    A str, so it travels through the environment as written; Path() would collapse its `//`."""


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="BENCHFLEET_", arbitrary_types_allowed=True)

    redis_url: str = "redis://127.0.0.1:6379/0"
    # A local directory, or sftp://USER@HOST[:PORT]/PATH (`/~/PATH`: under the login's home).
    artifacts: Path | SftpUrl = _DATA / "artifacts"
    # Where an SFTP store keeps a worker's staged attempts and the coordinator's verified copies.
    artifact_cache: Path = Path.home() / ".cache" / "benchfleet" / "artifacts"
    workspace: Path = Path.home() / ".cache" / "benchfleet" / "workspace"
    models_dir: Path = Path("models")
    catalogue: Path | None = None
    # This host's name in the fleet; deploy writes it. Network-namespace test hosts share one
    # hostname, so identity is a setting, never socket.gethostname() alone.
    host: str | None = None
    # Capability tags a worker offers beyond its backend (`gpu=gb10`, `model:NAME` is added
    # for every checkpoint found in MODELS_DIR). JSON list in the environment.
    tags: list[str] = []
    # Ed25519 keys (PEM): the coordinator signs cell envelopes with the private key; workers
    # hold only the public key and run nothing that it does not verify.
    signing_key: Path | None = None
    verify_key: Path | None = None
    # Target repositories a worker agrees to build (URLs or absolute paths; JSON list).
    # Empty means "only what the demo and tests create under the workspace's parent".
    allowed_repos: list[str] = []
    # The host lease: one measured command or build per host at a time, across all its workers.
    host_lock: Path = Path.home() / ".cache" / "benchfleet" / "host.lock"
    # The idle gate before a group's first run and after a gap between commands.
    idle_load1: float = 0.6
    idle_max_wait_s: float = 600.0
    idle_gap_s: float = 300.0
    idle_interval_s: float = 5.0
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
    # The SSH key the SFTP artifact store authenticates with (an sftp:// BENCHFLEET_ARTIFACTS).
    ssh_key: Path | None = None
    # The known_hosts file that names the storage host's key (default: ~/.ssh/known_hosts).
    ssh_known_hosts: Path | None = None

    @field_validator("redis_url")
    @classmethod
    def _redis_url(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in _REDIS_SCHEMES:
            raise ValueError(f"{redacted(value)!r} is not a Redis URL; use "
                             "redis://[:PASSWORD@]HOST:PORT/DB or rediss:// for TLS")
        try:
            parts.port  # noqa: B018 - a malformed port raises here, not deep inside redis-py
        except ValueError:
            raise ValueError(f"{redacted(value)!r} has a port that is not a number") from None
        if parts.scheme != "unix" and not parts.hostname:
            raise ValueError(f"{redacted(value)!r} names no host; use "
                             "redis://[:PASSWORD@]HOST:PORT/DB")
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
    host = parts.hostname or ""
    netloc = f"***@{host}" + (f":{parts.port}" if _port(url) else "")
    return urlunsplit(parts._replace(netloc=netloc))


def _port(url: str) -> int | None:
    try:
        return urlsplit(url).port
    except ValueError:
        return None
