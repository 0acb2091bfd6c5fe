"""The fast tier really runs away from UTC, with daylight saving: otherwise a timestamp written
in local time would pass as UTC (tests/support/local_time.py)."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta


def test_local_time_is_five_hours_behind_utc_in_winter() -> None:
    winter = datetime(2026, 1, 15, 12, tzinfo=UTC)
    assert winter.astimezone().utcoffset() == timedelta(hours=-5)
    assert time.localtime(winter.timestamp()).tm_zone == "EST"


def test_local_time_is_four_hours_behind_utc_in_summer() -> None:
    summer = datetime(2026, 7, 15, 12, tzinfo=UTC)
    assert summer.astimezone().utcoffset() == timedelta(hours=-4)


def test_a_naive_local_clock_reading_is_not_utc() -> None:
    # What a defect such as `datetime.now()` for `datetime.now(UTC)` would write.
    local = datetime.now().replace(tzinfo=UTC)
    assert abs(local - datetime.now(UTC)) >= timedelta(hours=4) - timedelta(minutes=1)
