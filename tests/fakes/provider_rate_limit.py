"""The fake providers' "429 above N requests per minute" mode: a provider-side sliding window that
admits at most `requests` calls in any `window_s` seconds and refuses the rest with 429 and a
`retry-after` saying when the oldest admitted call leaves the window. It keeps every admitted
and refused instant, so a bench or test can check what the provider saw.

Example:
    fake.rate_limit = ProviderRateLimit(requests=50)
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field


@dataclass
class ProviderRateLimit:
    """At most `requests` admitted calls in any `window_s` seconds, as a provider enforces it."""

    requests: int
    window_s: float = 60.0
    admitted: list[float] = field(default_factory=list)
    refused: list[float] = field(default_factory=list)

    def admit(self, now: float | None = None) -> float | None:
        """Admits one call at `now` (monotonic seconds) and returns None, or refuses it and
        returns the seconds until a call would be admitted."""
        now = time.monotonic() if now is None else now
        inside = [at for at in self.admitted if at > now - self.window_s]
        if len(inside) < self.requests:
            self.admitted.append(now)
            return None
        self.refused.append(now)
        return inside[len(inside) - self.requests] + self.window_s - now

    def spend_elsewhere(self, for_s: float) -> None:
        """Another application fills the window for the next `for_s` seconds: every call before
        then is refused, however long a loaded machine takes to send it."""
        at = time.monotonic() + for_s - self.window_s
        self.admitted.extend([at] * self.requests)

    def most_in_any_window(self) -> int:
        """The most calls admitted in any `window_s` seconds (never above `requests`)."""
        times = sorted(self.admitted)
        most, start = 0, 0
        for end, at in enumerate(times):
            while times[start] <= at - self.window_s:
                start += 1
            most = max(most, end - start + 1)
        return most

    def refused_after(self, seconds: float) -> int:
        """429s answered later than `seconds` after the first admitted call."""
        if not self.admitted:
            return 0
        first = min(self.admitted)
        return sum(1 for at in self.refused if at - first > seconds)


def retry_after_header(seconds: float) -> str:
    """A `retry-after` value in whole seconds, rounded up (never 0 while the window is full)."""
    return str(max(1, math.ceil(seconds)))
