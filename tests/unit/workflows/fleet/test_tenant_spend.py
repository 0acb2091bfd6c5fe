"""A tenant's ledger arithmetic (`workflows/fleet/tenant_spend.py`): reservations against the caps,
settlement, the UTC day and month turning over, reservations that outlive any call."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from turnkeeper.contracts.tenants import TenantCaps
from turnkeeper.workflows.fleet.tenant_spend import (
    RESERVATION_TTL,
    LedgerState,
    day_of,
    month_of,
    next_turnover,
)

NOON = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)


def ledger(day: float | None = None, month: float | None = None) -> LedgerState:
    return LedgerState(tenant="acme", caps=TenantCaps(usd_per_day=day, usd_per_month=month))


def test_a_call_within_the_caps_is_reserved_and_counts_until_settled() -> None:
    state = ledger(day=1.0)
    assert state.reserve("a", 0.4, NOON) is None
    assert state.reserved_usd() == pytest.approx(0.4)
    assert state.reserve("b", 0.5, NOON) is None
    # 0.4 + 0.5 reserved: a third call of 0.2 would pass the cap.
    refusal = state.reserve("c", 0.2, NOON, "turn-c")
    assert refusal is not None
    assert "tenant 'acme'" in refusal and "daily cap (UTC day 2026-11-26) of $1" in refusal
    assert "$0.900000 reserved" in refusal and "$0.200000" in refusal
    assert "c" not in state.reservations and state.waiting == ["turn-c"]
    state.settle("a", 0.1, NOON)
    assert state.spent_day_usd == pytest.approx(0.1) and state.spent_month_usd == pytest.approx(0.1)
    assert state.reserved_usd() == pytest.approx(0.5)
    assert state.reserve("c", 0.2, NOON) is None


def test_exactly_at_the_cap_is_allowed_and_a_cent_more_is_not() -> None:
    state = ledger(day=1.0)
    assert state.reserve("a", 1.0, NOON) is None
    assert ledger(day=1.0).reserve("a", 1.01, NOON) is not None


def test_a_cap_of_zero_refuses_even_a_free_call() -> None:
    assert ledger(day=0).reserve("a", 0.0, NOON) is not None
    assert ledger().reserve("a", 0.0, NOON) is None


def test_spend_at_the_cap_refuses_every_further_call() -> None:
    state = ledger(day=1.0)
    state.reserve("a", 0.0, NOON)
    state.settle("a", 1.0, NOON)
    assert state.reserve("b", 0.0, NOON) is not None


def test_a_retry_replaces_its_own_reservation() -> None:
    state = ledger(day=1.0)
    assert state.reserve("a", 0.6, NOON) is None
    assert state.reserve("a", 0.6, NOON) is None
    assert state.reserved_usd() == pytest.approx(0.6)


def test_the_monthly_cap_counts_every_day_of_the_month() -> None:
    state = ledger(day=1.0, month=1.5)
    state.reserve("a", 0.9, NOON)
    state.settle("a", 0.9, NOON)
    tomorrow = NOON + timedelta(days=1)
    refusal = state.reserve("b", 0.9, tomorrow)
    assert refusal is not None and "monthly cap (UTC month 2026-11) of $1.5" in refusal
    assert state.spent_day_usd == 0 and state.spent_month_usd == pytest.approx(0.9)
    assert state.reserve("b", 0.6, tomorrow) is None


def test_the_day_and_the_month_turn_over_at_utc_midnight() -> None:
    state = ledger(day=1.0)
    last = datetime(2026, 11, 30, 23, 59, 59, tzinfo=UTC)
    state.reserve("a", 0.0, last)
    state.settle("a", 1.0, last)
    assert state.reserve("b", 0.1, last) is not None
    first = datetime(2026, 12, 1, 0, 0, tzinfo=UTC)
    assert state.reserve("b", 0.1, first) is None
    assert (state.day, state.month) == ("2026-12-01", "2026-12")
    assert state.spent_day_usd == 0 and state.spent_month_usd == 0


def test_a_call_settled_after_midnight_counts_for_the_new_day() -> None:
    state = ledger(day=1.0)
    state.reserve("a", 0.5, NOON)
    state.settle("a", 0.5, NOON + timedelta(days=1))
    assert state.day == "2026-11-27" and state.spent_day_usd == pytest.approx(0.5)


def test_periods_are_utc_whatever_the_clock_zone() -> None:
    late_in_new_york = datetime(2026, 11, 26, 20, 0, tzinfo=UTC).astimezone(
        timezone(timedelta(hours=-5))
    )
    assert day_of(late_in_new_york) == "2026-11-26"
    assert month_of(datetime(2026, 11, 30, 23, 0, tzinfo=UTC)) == "2026-11"
    assert next_turnover(NOON) == datetime(2026, 11, 27, tzinfo=UTC)
    assert next_turnover(datetime(2026, 11, 27, tzinfo=UTC)) == datetime(2026, 11, 28, tzinfo=UTC)


def test_a_reservation_that_never_settles_lapses() -> None:
    state = ledger(day=1.0)
    state.reserve("a", 0.9, NOON)
    assert state.reserve("b", 0.9, NOON + RESERVATION_TTL) is not None
    assert state.reserve("b", 0.9, NOON + RESERVATION_TTL + timedelta(seconds=1)) is None
    assert list(state.reservations) == ["b"]


def test_new_caps_wake_the_waiting_turns_once() -> None:
    state = ledger(day=0)
    state.reserve("a", 0.1, NOON, "turn-1")
    state.reserve("b", 0.1, NOON, "turn-1")
    state.reserve("c", 0.1, NOON, "turn-2")
    assert state.set_caps(TenantCaps(usd_per_day=5), NOON) == ["turn-1", "turn-2"]
    assert state.waiting == [] and state.set_caps(TenantCaps(), NOON) == []
    assert state.reserve("a", 0.1, NOON) is None


def test_a_refused_turn_that_goes_on_at_midnight_waits_no_more() -> None:
    state = ledger(day=0.15)
    state.reserve("a", 0.1, NOON)
    state.reserve("b", 0.1, NOON, "turn-2")
    assert state.waiting == ["turn-2"]
    assert state.reserve("b", 0.1, NOON + timedelta(days=1), "turn-2") is None
    assert state.waiting == []


def test_spend_reports_the_current_periods() -> None:
    state = ledger(day=2.0, month=10.0)
    state.reserve("a", 0.3, NOON)
    state.reserve("b", 0.2, NOON)
    state.settle("b", 0.15, NOON)
    spend = state.spend(NOON)
    assert (spend.tenant, spend.day, spend.month) == ("acme", "2026-11-26", "2026-11")
    assert spend.spent_day_usd == pytest.approx(0.15) and spend.reserved_usd == pytest.approx(0.3)
    assert spend.in_flight == 1 and spend.caps.usd_per_month == 10.0 and spend.as_of == NOON


def test_settled_calls_add_up_in_the_day_and_the_month() -> None:
    state = ledger(day=1.0, month=10.0)
    for key, cost in (("a", 0.4), ("b", 0.5)):
        assert state.reserve(key, 0.0, NOON) is None
        state.settle(key, cost, NOON)
    spend = state.spend(NOON)
    assert spend.spent_day_usd == pytest.approx(0.9) and spend.spent_month_usd == pytest.approx(0.9)
    assert state.reserve("c", 0.2, NOON) is not None  # 0.9 spent: 0.2 more passes the day's $1


def test_a_monthly_cap_alone_holds() -> None:
    state = ledger(month=1.0)
    state.reserve("a", 0.0, NOON)
    state.settle("a", 0.9, NOON)
    refusal = state.reserve("b", 0.2, NOON)
    assert refusal is not None and "monthly cap (UTC month 2026-11) of $1" in refusal
    assert state.reserve("b", 0.1, NOON) is None


def test_a_reservation_counts_for_an_hour_longer_than_any_model_call() -> None:
    state = ledger(day=1.0)
    state.reserve("a", 0.9, NOON)
    assert state.reserve("b", 0.9, NOON + timedelta(hours=1)) is not None
    assert state.reserve("b", 0.9, NOON + timedelta(hours=1, seconds=1)) is None


def test_spend_is_reported_to_a_tenth_of_a_nano_dollar() -> None:
    # Rounded so that float sums (0.1 + 0.2) read as the cents they are.
    state = ledger(day=2.0)
    for key, cost in (("a", 0.1), ("b", 0.2)):
        state.reserve(key, 0.0, NOON)
        state.settle(key, cost, NOON)
    assert state.spend(NOON).spent_day_usd == 0.3
    state.reserve("c", 0.0, NOON)
    state.settle("c", 0.12345678912, NOON)
    state.reserve("d", 0.12345678912, NOON)
    spend = state.spend(NOON)
    assert spend.spent_day_usd == spend.spent_month_usd == 0.4234567891
    assert spend.reserved_usd == 0.1234567891
