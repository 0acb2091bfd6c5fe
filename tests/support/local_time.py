"""The fast tier (tests/unit) runs in New York time, not in UTC: a clock read or
a timestamp written in local time instead of UTC is then hours off, and a test sees it. On a
machine in UTC, as CI and most containers are, such a defect would pass every test.

A POSIX rule rather than a zone name: it needs no tz database, so it cannot silently fall back
to UTC where the database is missing. Daylight saving is in it, as in the zone it imitates."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Final

import pytest

# UTC-5 (EST), and UTC-4 (EDT) from the second Sunday of March to the first Sunday of November.
AWAY_FROM_UTC: Final = "EST+5EDT,M3.2.0/2,M11.1.0/2"


@pytest.fixture(autouse=True)
def away_from_utc() -> Iterator[None]:
    """Each test of the folder whose conftest imports this runs in `AWAY_FROM_UTC`. Per test, not
    at import: set at import, the zone would stay for every later test of a whole-suite run."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = AWAY_FROM_UTC
    time.tzset()
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = before
        time.tzset()
