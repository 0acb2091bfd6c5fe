"""The ledger and HTTP API rows of the chaos matrix judge what they read with plain functions
(`bench/chaos/ledger_rows.py`, `bench/chaos/http_rows.py`); each must fail on the fault it is
there to catch, or the quick matrix's pass would say nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime

from turnkeeper.contracts.rate_limits import Grant
from turnkeeper.contracts.tenants import TenantCaps, TenantSpend

from bench.chaos.http_rows import _ranges, _sse
from bench.chaos.ledger_rows import (
    REQUESTS_PER_WINDOW,
    WINDOW_MS,
    _call_cost,
    spend_problems,
    window_problems,
)
from tests.fakes.fake_anthropic import BilledCall


def spend(spent: float, reserved: float = 0.0, in_flight: int = 0) -> TenantSpend:
    return TenantSpend(
        tenant="t", caps=TenantCaps(), day="2026-11-29", spent_day_usd=spent, month="2026-11",
        spent_month_usd=spent, reserved_usd=reserved, in_flight=in_flight,
        as_of=datetime.now(UTC),
    )  # fmt: skip


CALLS = [BilledCall("k", step, 400 + 50 * step, 20) for step in range(4)]
COUNTED = sum(_call_cost(call) for call in CALLS)


def test_a_spend_that_settled_every_reported_call_once_holds() -> None:
    assert spend_problems(spend(COUNTED), [(4, CALLS)]) == []


def test_a_call_a_crash_cut_off_may_be_settled_or_not_but_never_twice() -> None:
    retried = [*CALLS[:2], CALLS[1], *CALLS[2:]]  # step 1 billed twice, once in the report
    extra = _call_cost(CALLS[1])
    assert spend_problems(spend(COUNTED), [(4, retried)]) == []
    assert spend_problems(spend(COUNTED + extra), [(4, retried)]) == []
    assert spend_problems(spend(COUNTED + 2 * extra), [(4, retried)])
    assert spend_problems(spend(COUNTED + extra), [(4, CALLS)])  # settled twice


def test_a_reservation_left_in_the_ledger_is_a_leak() -> None:
    assert spend_problems(spend(COUNTED, reserved=0.001, in_flight=1), [(4, CALLS)])


def grants(*at_ms: int) -> list[Grant]:
    return [Grant(id=f"g{n}", at_ms=at) for n, at in enumerate(at_ms)]


def test_a_window_holds_at_most_the_limit() -> None:
    spaced = grants(*(n * 10 for n in range(REQUESTS_PER_WINDOW)), WINDOW_MS + 5)
    assert window_problems(spaced, billed=len(spaced)) == []
    crowded = grants(*(n * 10 for n in range(REQUESTS_PER_WINDOW + 1)))
    assert window_problems(crowded, billed=len(crowded))


def test_more_calls_billed_than_grants_seen_blinds_the_window_check() -> None:
    assert window_problems(grants(0), billed=2)


class Lines:
    """An HTTP answer whose body is `lines` (what `_sse` reads of one)."""

    def __init__(self, lines: list[str]) -> None:
        self._lines = lines

    async def aiter_lines(self) -> AsyncIterator[str]:
        for line in self._lines:
            yield line


async def test_events_are_read_with_their_ids_and_keepalives_skipped() -> None:
    body = ["id: 0", "event: turn_started", 'data: {"kind": "turn_started"}', "", ": keepalive",
            "", "id: 1", "event: iteration_started", "data: {}", ""]  # fmt: skip
    read = [event async for event in _sse(Lines(body))]  # type: ignore[arg-type]
    assert read == [(0, "turn_started", '{"kind": "turn_started"}'), (1, "iteration_started", "{}")]


def test_a_repeated_or_skipped_event_shows_in_the_ranges() -> None:
    assert _ranges([0, 1, 2, 3]) == "0-3"
    assert _ranges([0, 1, 2, 2, 3]) == "0-2, 2-3"
    assert _ranges([0, 1, 3]) == "0-1, 3-3"
