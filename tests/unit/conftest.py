"""The fast tier's tests run away from UTC (tests/support/local_time.py says why)."""

from tests.support.local_time import away_from_utc  # noqa: F401  (an autouse fixture)
