"""The clock gives the two forms the fleet stores, and they agree."""

from datetime import UTC, datetime

from workers.shared.clock import epoch, now


def test_iso_and_epoch_are_utc_and_agree() -> None:
    iso, seconds = now(), epoch()
    stamp = datetime.fromisoformat(iso)
    assert stamp.tzinfo is not None and stamp.utcoffset() == UTC.utcoffset(None)
    assert abs(stamp.timestamp() - seconds) < 1.0
    assert len(iso.split(".")[1]) == len("000+00:00")  # milliseconds, never more
