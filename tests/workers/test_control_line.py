"""The control line: the worker's own subscription, on a socket it can poll beside a child's
pidfd; it hears what is published, says when it is down, and subscribes again when asked."""

import select
from pathlib import Path

import pytest
import redis

from runner.demo.redis_server import RedisServer
from tests.support.waits import eventually
from workers.control_line import ControlLine, LineDown


def _readable(line: ControlLine) -> bool:
    fd = line.fileno()
    assert fd is not None
    return bool(select.select([fd], [], [], 10)[0])


def test_a_message_wakes_the_descriptor_and_is_read(unit_redis: tuple[redis.Redis, str]) -> None:
    client, url = unit_redis
    line = ControlLine(url, "ch-1")
    assert line.messages() == []  # opens and subscribes
    client.publish("ch-1", "one")
    client.publish("ch-2", "not ours")
    client.publish("ch-1", "two")
    assert _readable(line)
    heard: list[str] = []
    eventually(lambda: heard.extend(line.messages()) or len(heard) >= 2, 10, "both messages")
    assert heard == ["one", "two"]
    line.close()


def test_a_dropped_line_says_so_and_subscribes_again(unit_redis: tuple[redis.Redis, str]) -> None:
    client, url = unit_redis
    line = ControlLine(url, "ch-1")
    line.messages()
    client.client_kill_filter(_type="pubsub")
    assert _readable(line)
    with pytest.raises(LineDown):
        line.messages()
    assert line.fileno() is None
    with pytest.raises(LineDown, match="down"):
        line.messages(reopen=False)  # while a command runs it never reconnects
    assert line.messages() == []
    client.publish("ch-1", "again")
    assert _readable(line) and line.messages() == ["again"]
    line.close()


def test_a_password_is_sent_and_a_wrong_one_refused(tmp_path: Path) -> None:
    with RedisServer(tmp_path / "redis", password="s3cret") as server:
        line = ControlLine(server.url, "ch-1")
        assert line.messages() == []
        redis.Redis.from_url(server.url).publish("ch-1", "hi")
        assert _readable(line) and line.messages() == ["hi"]
        line.close()
        wrong = ControlLine(server.url.replace("s3cret", "nope"), "ch-1")
        with pytest.raises(LineDown, match="cannot open"):
            wrong.messages()
