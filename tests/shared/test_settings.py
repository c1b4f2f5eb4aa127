"""Settings: one home, BENCHFLEET_*; a bad value is one sentence naming the variable, and a
password never appears in a message."""

import pytest

from jobs.errors import UserError
from workers.shared.settings import SftpUrl, load_settings, redacted


def test_values_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCHFLEET_REDIS_URL", "redis://10.0.0.2:6380/1")
    monkeypatch.setenv("BENCHFLEET_TAGS", '["gpu=gb10"]')
    settings = load_settings()
    assert settings.redis_url == "redis://10.0.0.2:6380/1" and settings.tags == ["gpu=gb10"]


def test_a_bad_redis_url_names_its_setting_and_hides_the_password() -> None:
    with pytest.raises(UserError) as error:
        load_settings(redis_url="http://:hunter2@host:6379/0")
    message = str(error.value)
    assert message.startswith("setting BENCHFLEET_REDIS_URL:") and "hunter2" not in message
    with pytest.raises(UserError, match="port that is not a number"):
        load_settings(redis_url="redis://host:port/0")
    with pytest.raises(UserError, match="names no host"):
        load_settings(redis_url="redis:///0")


def test_an_sftp_store_is_kept_as_written_and_takes_no_password() -> None:
    settings = load_settings(artifacts="sftp://bench@store:2222/~/artifacts")
    assert isinstance(settings.artifacts, SftpUrl)
    assert str(settings.artifacts) == "sftp://bench@store:2222/~/artifacts"
    with pytest.raises(UserError, match="takes no password"):
        load_settings(artifacts="sftp://bench:pw@store/x")
    with pytest.raises(UserError, match="not an SFTP store"):
        load_settings(artifacts="sftp://store/x")


def test_redacted_hides_user_and_password() -> None:
    assert redacted("rediss://:pw@h:6380/0") == "rediss://***@h:6380/0"
    assert redacted("redis://h:6379/0") == "redis://h:6379/0"


def test_a_sentinel_url_is_accepted_and_a_malformed_one_says_what_to_write() -> None:
    url = "sentinel://:hunter2@s1:26379,s2:26380,s3/benchfleet/1"
    assert load_settings(redis_url=url).redis_url == url
    for bad, why in (("sentinel://s1:26379;sentinel://s2:26379/0", "commas, not `;`"),
                     ("sentinel://:hunter2@s1:26379/", "name the service"),
                     ("sentinel://s1:x/benchfleet", "port that is not a number"),
                     ("sentinel://s1/benchfleet/zero", "'zero' is not a number"),
                     ("sentinel://s1/benchfleet?ssl=1", "takes no options")):
        with pytest.raises(UserError) as error:
            load_settings(redis_url=bad)
        message = str(error.value)
        assert message.startswith("setting BENCHFLEET_REDIS_URL:") and why in message, message
        assert "hunter2" not in message and "sentinel://[:PASSWORD@]HOST:PORT" in message


def test_redacted_keeps_every_sentinel() -> None:
    assert redacted("sentinel://:pw@s1:26379,s2:26379/m/0") == "sentinel://***@s1:26379,s2:26379/m/0"
