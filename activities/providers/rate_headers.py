"""How long a provider's rate limit holds, read from its headers, so the fleet's limiter
(`TURNKEEPER_RATE_LIMITS`) backs off together: `retry-after` / `retry-after-ms`, Anthropic's
`anthropic-ratelimit-<limit>-remaining` / `-reset` (RFC 3339 instants), OpenAI's
`x-ratelimit-remaining-<limit>` / `x-ratelimit-reset-<limit>` (durations such as `6m0s`, `20ms`).
A 429's headers say it (`rate_limited_for`), and so does a successful answer whose remaining
count of a limit is 0 (`exhausted_for`): the next call would get a 429, so the fleet waits first.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Final

from turnkeeper.activities.providers.provider import parse_retry_after

# A 429 that says nothing about when its limit resets: wait this long before the next try.
DEFAULT_BACKOFF_S: Final = 1.0
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNIT_S: Final = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


def rate_limited_for(headers: Mapping[str, str], now: float) -> float:
    """Seconds until the provider's exhausted limit resets (the longest said), at `now` (epoch
    seconds); `DEFAULT_BACKOFF_S` when the headers say nothing usable."""
    said = [
        parse_retry_after(headers.get("retry-after"), now=now),
        _milliseconds(headers.get("retry-after-ms")),
        # A gateway (LiteLLM) relays the upstream's hint under its own name.
        parse_retry_after(headers.get("llm_provider-retry-after"), now=now),
        _milliseconds(headers.get("llm_provider-retry-after-ms")),
        *_anthropic_resets(headers, now),
        *_openai_resets(headers),
    ]
    known = [seconds for seconds in said if seconds is not None]
    return max(known) if known else DEFAULT_BACKOFF_S


def exhausted_for(headers: Mapping[str, str], now: float) -> float | None:
    """Seconds until the longest-resetting limit whose remaining count the headers of a
    successful answer say is 0 resets, at `now` (epoch seconds); `DEFAULT_BACKOFF_S` when such a
    limit's reset is unreadable; None when no limit is spent (the usual case)."""
    resets = [*_anthropic_resets(headers, now), *_openai_resets(headers)]
    if not resets:
        return None
    known = [seconds for seconds in resets if seconds is not None]
    return max(known) if known else DEFAULT_BACKOFF_S


def _milliseconds(value: str | None) -> float | None:
    seconds = parse_retry_after(value)
    return None if seconds is None else seconds / 1000


def _anthropic_resets(headers: Mapping[str, str], now: float) -> list[float | None]:
    """The reset of each Anthropic limit whose remaining count is 0."""
    resets: list[float | None] = []
    for name, value in headers.items():
        lower = name.lower()
        if not (lower.startswith("anthropic-ratelimit-") and lower.endswith("-remaining")):
            continue
        if value.strip() != "0":
            continue
        reset = headers.get(lower[: -len("-remaining")] + "-reset")
        resets.append(_instant_from_now(reset, now))
    return resets


def _instant_from_now(value: str | None, now: float) -> float | None:
    if not value:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None
    return max(0.0, moment.timestamp() - now)


def _openai_resets(headers: Mapping[str, str]) -> list[float | None]:
    """The reset of each OpenAI limit whose remaining count is 0."""
    resets: list[float | None] = []
    for name, value in headers.items():
        lower = name.lower()
        if not lower.startswith("x-ratelimit-remaining-") or value.strip() != "0":
            continue
        limit = lower[len("x-ratelimit-remaining-") :]
        resets.append(parse_duration(headers.get(f"x-ratelimit-reset-{limit}")))
    return resets


def parse_duration(value: str | None) -> float | None:
    """Seconds of an OpenAI reset such as `1s`, `6m0s`, `20ms` or `1h2m3.5s`; None if not one."""
    if not value:
        return None
    text = value.strip()
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(amount + unit for amount, unit in parts) != text:
        return None
    return sum(float(amount) * _UNIT_S[unit] for amount, unit in parts)
