"""The ledger's sliding-window arithmetic (`workflows/fleet/rate_window.py`): strict 60-second
windows, the wait until an ask fits, the limit that holds it back, and settling an estimate."""

from __future__ import annotations

from turnkeeper.contracts.rate_limits import (
    AcquireInput,
    AcquireResult,
    Grant,
    RateLimit,
    SettleTokensInput,
)
from turnkeeper.workflows.fleet import rate_window

RPM2 = RateLimit(requests_per_minute=2)


def ask(limit: RateLimit = RPM2, inp: int = 0, out: int = 0) -> AcquireInput:
    return AcquireInput(id="a", limit=limit, input_tokens=inp, output_tokens=out)


def grant(at_ms: int, inp: int = 0, out: int = 0, id: str = "g") -> Grant:
    return Grant(id=id, at_ms=at_ms, input_tokens=inp, output_tokens=out)


def test_live_keeps_grants_of_the_last_60_seconds_only() -> None:
    grants = [grant(0), grant(1), grant(59_999)]
    assert rate_window.live(grants, 60_000) == [grant(1), grant(59_999)]
    assert rate_window.live(grants, 60_001) == [grant(59_999)]
    assert rate_window.live(grants[:2], 1_000, window_ms=500) == []


def test_an_ask_within_every_limit_is_granted() -> None:
    result = rate_window.decide([grant(0)], ask(), 10)
    assert result.granted and result.wait_ms == 0 and result.awaiting is None


def test_a_full_window_waits_until_its_oldest_grant_leaves() -> None:
    result = rate_window.decide([grant(5_000), grant(1_000)], ask(), 30_000)
    assert not result.granted
    assert result.wait_ms == 31_000  # 1_000 + 60_000 - 30_000: then one request of room
    assert result.awaiting == "requests"
    # At that instant it fits, and not a millisecond before.
    assert not rate_window.decide([grant(5_000), grant(1_000)], ask(), 60_999).granted
    assert rate_window.decide([grant(5_000), grant(1_000)], ask(), 61_000).granted


def test_grants_that_left_the_window_do_not_count() -> None:
    assert rate_window.decide([grant(0), grant(1)], ask(), 60_001).granted


def test_tokens_wait_for_as_many_old_grants_as_make_room() -> None:
    limit = RateLimit(input_tokens_per_minute=100)
    grants = [grant(0, inp=50), grant(10_000, inp=40), grant(20_000, inp=10)]
    result = rate_window.decide(grants, ask(limit, inp=55), 30_000)
    # 100 used; 55 fit once 55 have left: the first two grants (90), the second at 70_000.
    assert result == AcquireResult(granted=False, wait_ms=40_000, awaiting="input_tokens")
    assert rate_window.decide(grants, ask(limit, inp=0), 30_000).granted


def test_the_limit_that_waits_longest_is_named() -> None:
    limit = RateLimit(requests_per_minute=10, output_tokens_per_minute=1_000)
    grants = [grant(0, out=900), grant(20_000, out=50)]
    result = rate_window.decide(grants, ask(limit, out=200), 30_000)
    assert (result.awaiting, result.wait_ms) == ("output_tokens", 30_000)


def test_the_longest_wait_is_named_whichever_limit_is_checked_first() -> None:
    # Requests are checked first and wait longest (both grants must leave); input tokens need
    # only the first to leave, output tokens have room now: the ask waits for requests.
    limit = RateLimit(
        requests_per_minute=1, input_tokens_per_minute=100, output_tokens_per_minute=1_000
    )
    grants = [grant(0, inp=90), grant(20_000)]
    result = rate_window.decide(grants, ask(limit, inp=20), 30_000)
    assert result == AcquireResult(granted=False, wait_ms=50_000, awaiting="requests")


def test_an_oversized_ask_waits_for_an_empty_window_then_passes() -> None:
    limit = RateLimit(input_tokens_per_minute=100)
    grants = [grant(0, inp=1), grant(5_000, inp=1)]
    assert rate_window.decide(grants, ask(limit, inp=500), 10_000).wait_ms == 55_000
    assert rate_window.decide([], ask(limit, inp=500), 10_000).granted


def test_exactly_the_limit_fits() -> None:
    limit = RateLimit(input_tokens_per_minute=100)
    assert rate_window.decide([grant(0, inp=60)], ask(limit, inp=40), 1).granted
    assert not rate_window.decide([grant(0, inp=60)], ask(limit, inp=41), 1).granted


def test_a_provider_back_off_holds_every_ask() -> None:
    result = rate_window.decide([], ask(), 1_000, blocked_until_ms=4_000)
    assert (result.granted, result.wait_ms, result.awaiting) == (False, 3_000, "provider_backoff")
    assert rate_window.decide([], ask(), 4_000, blocked_until_ms=4_000).granted


def test_a_shorter_window_for_tests() -> None:
    grants = [grant(0), grant(100)]
    result = rate_window.decide(grants, ask(), 500, window_ms=1_000)
    assert result.wait_ms == 500
    assert rate_window.decide(grants, ask(), 1_000, window_ms=1_000).granted


def test_settle_replaces_the_estimate_of_that_grant_only() -> None:
    grants = [grant(0, inp=500, out=4096, id="a"), grant(1, inp=7, out=7, id="b")]
    assert rate_window.settle(grants, "a", 120, 30)
    assert grants == [grant(0, inp=120, out=30, id="a"), grant(1, inp=7, out=7, id="b")]
    assert not rate_window.settle(grants, "gone", 1, 1)


def test_settle_finds_its_grant_after_others_by_the_id_its_payload_carries() -> None:
    # The id arrives in the settle signal's own payload: equal to the grant's, not the same
    # string object; and the grant settled is not the first in the window.
    grants = [grant(0, inp=9, out=9, id="attempt-b"), grant(1, inp=500, out=4096, id="attempt-a")]
    counted = SettleTokensInput.model_validate_json(
        '{"id": "attempt-a", "input_tokens": 120, "output_tokens": 30}'
    )
    assert rate_window.settle(grants, counted.id, counted.input_tokens, counted.output_tokens)
    assert grants == [
        grant(0, inp=9, out=9, id="attempt-b"),
        grant(1, inp=120, out=30, id="attempt-a"),
    ]


def test_reserve_now_when_it_fits() -> None:
    assert rate_window.reserve([grant(0)], ask(), 10) == (10, None)


def test_reserve_after_the_window_frees_room() -> None:
    assert rate_window.reserve([grant(1_000), grant(5_000)], ask(), 30_000) == (
        61_000,
        "requests",
    )


def test_reserve_first_come_first_served_after_every_earlier_reservation() -> None:
    # A reservation at 61_000 is already made: the next one is no earlier, even with room.
    limit = RateLimit(requests_per_minute=10)
    assert rate_window.reserve([grant(61_000)], ask(limit), 30_000) == (61_000, "requests")


def test_reserve_after_a_provider_back_off() -> None:
    assert rate_window.reserve([], ask(), 1_000, blocked_until_ms=4_000) == (
        4_000,
        "provider_backoff",
    )
    assert rate_window.reserve([grant(4_000), grant(4_500)], ask(), 1_000, 4_000) == (
        64_000,
        "requests",
    )
