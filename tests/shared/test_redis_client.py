"""The one sentinel:// URL, read once into what redis-py and Celery's broker each need."""

from workers.shared.redis_client import SentinelUrl, broker, parse_sentinel


def test_a_sentinel_url_names_its_sentinels_service_database_and_password() -> None:
    assert parse_sentinel("sentinel://:p%40ss@10.0.0.1:26379,s2,[::1]:26380/bench/2") == \
        SentinelUrl([("10.0.0.1", 26379), ("s2", 26379), ("::1", 26380)], "bench", 2, None,
                    "p@ss")
    assert parse_sentinel("sentinel://s1/bench").db == 0


def test_the_broker_gets_kombus_form_and_the_service_as_master_name() -> None:
    url, options = broker("sentinel://:p%40ss@s1:26379,s2:26380/bench/2")
    assert url == "sentinel://:p%40ss@s1:26379/2;sentinel://:p%40ss@s2:26380/2"
    assert options["master_name"] == "bench"


def test_a_plain_redis_url_goes_to_the_broker_as_it_is() -> None:
    assert broker("redis://:pw@h:6379/0") == ("redis://:pw@h:6379/0", {})
