"""The sliding-window arithmetic of a rate-limit ledger, pure: whether an ask fits the last 60
seconds of grants, and if not, how long until it does and which limit holds it back.

Strict meaning: a grant at instant t fits when the grants made in (t - 60 s, t] plus the ask stay
within every limit. An ask larger than a limit on its own (a prompt bigger than the minute's
input tokens) is let through once the window is empty, else it would wait forever.
"""

from __future__ import annotations

from turnkeeper.contracts.rate_limits import (
    WINDOW_MS,
    AcquireInput,
    AcquireResult,
    Grant,
    Measure,
)

_MEASURES: tuple[tuple[Measure, str], ...] = (
    ("requests", "requests_per_minute"),
    ("input_tokens", "input_tokens_per_minute"),
    ("output_tokens", "output_tokens_per_minute"),
)


def live(grants: list[Grant], now_ms: int, window_ms: int = WINDOW_MS) -> list[Grant]:
    """The grants still inside the window that ends at `now_ms`."""
    return [grant for grant in grants if grant.at_ms > now_ms - window_ms]


def decide(
    grants: list[Grant],
    ask: AcquireInput,
    now_ms: int,
    blocked_until_ms: int = 0,
    window_ms: int = WINDOW_MS,
) -> AcquireResult:
    """Whether `ask` fits the live `grants` at `now_ms` (granted), else the shortest wait after
    which every limit has room, naming the limit that waits longest."""
    if blocked_until_ms > now_ms:
        return AcquireResult(
            granted=False, wait_ms=blocked_until_ms - now_ms, awaiting="provider_backoff"
        )
    window = sorted(live(grants, now_ms, window_ms), key=lambda grant: grant.at_ms)
    wait, awaiting = 0, None
    for measure, field in _MEASURES:
        limit = getattr(ask.limit, field)
        if limit is None:
            continue
        needed = _wait_for(window, measure, _asked(ask, measure), limit, window_ms - now_ms)
        if needed > wait:
            wait, awaiting = needed, measure
    if awaiting is None:
        return AcquireResult(granted=True)
    return AcquireResult(granted=False, wait_ms=wait, awaiting=awaiting)


def _asked(ask: AcquireInput, measure: Measure) -> int:
    return 1 if measure == "requests" else getattr(ask, measure)


def _wait_for(window: list[Grant], measure: Measure, asked: int, limit: int, shift_ms: int) -> int:
    """Milliseconds until `asked` more of `measure` fit under `limit`: 0 when they fit now, else
    until enough of the oldest grants (`window` is oldest first) leave the window: a grant made
    at `at_ms` leaves `at_ms + shift_ms` from now (`shift_ms` is the window's length minus now);
    an oversized ask counts as the whole limit, so it waits for an empty window."""
    room = limit - min(asked, limit)
    used = sum(getattr(grant, measure) for grant in window)
    for grant in window:
        if used <= room:
            break
        used -= getattr(grant, measure)
        if used <= room:
            # The grant leaves the window at at_ms + window (`live` keeps later grants only).
            return grant.at_ms + shift_ms
    return 0


def reserve(
    grants: list[Grant],
    ask: AcquireInput,
    now_ms: int,
    blocked_until_ms: int = 0,
    window_ms: int = WINDOW_MS,
) -> tuple[int, Measure | None]:
    """The instant at which `ask` is granted, and the limit it waits for (None: no wait): the
    earliest at which it fits, no earlier than now, the provider's back-off or any grant already
    made. First come, first served: because every grant is at or after those before it, the
    window that ends at the new grant is the only one it can overfill, so checking it is enough,
    and a caller told to start at that instant never needs to ask again."""
    start = max([now_ms, blocked_until_ms, *(grant.at_ms for grant in grants)])
    awaiting: Measure | None = None
    if start > now_ms:
        awaiting = "provider_backoff" if start == blocked_until_ms else "requests"
    result = decide(grants, ask, start, 0, window_ms)
    if result.granted:
        return start, awaiting
    return start + result.wait_ms, result.awaiting


def settle(grants: list[Grant], grant_id: str, input_tokens: int, output_tokens: int) -> bool:
    """Replaces the estimated tokens of the grant `grant_id` with the counted ones; False when
    the grant has already left the window (nothing to correct)."""
    for index, grant in enumerate(grants):
        if grant.id == grant_id:
            grants[index] = grant.model_copy(
                update={"input_tokens": input_tokens, "output_tokens": output_tokens}
            )
            return True
    return False
