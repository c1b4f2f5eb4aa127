"""benchfleet's configuration, in one place: environment variables prefixed BENCHFLEET_."""

from pathlib import Path

from pydantic_settings import BaseSettings, SettingsConfigDict

_DATA = Path.home() / ".local" / "share" / "benchfleet"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="BENCHFLEET_")

    redis_url: str = "redis://127.0.0.1:6379/0"
    artifacts: Path = _DATA / "artifacts"
    workspace: Path = Path.home() / ".cache" / "benchfleet" / "workspace"
    models_dir: Path = Path("models")
    catalogue: Path | None = None
    # How long Redis waits for an unacknowledged cell before handing it out again; longer
    # than any cell (cold mlxcel builds take ~25 min).
    visibility_timeout_s: int = 12 * 3600
