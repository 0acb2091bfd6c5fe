"""A tenant's spend as its ledger keeps it: settled spend of the current UTC day and month,
reservations of model calls in flight, and the caps. Pure arithmetic on plain values (no
Temporal, no clock: the ledger passes `workflow.now()`), so it is tested on its own.

A call reserves its maximum cost before it is made and is refused when settled spend, every
reservation in flight and its own maximum together would pass a cap; it settles after with what
it cost. So a cap is passed only by what the maximums underestimated, never by more than the
calls in flight."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Final

from pydantic import BaseModel, Field
from turnkeeper.contracts.tenants import TenantCaps, TenantSpend

# A reservation whose call never settled (its worker died, and no retry replaced it) stops
# counting after this long: longer than any model call may run (`MODEL_CALL_TIMEOUT`).
RESERVATION_TTL: Final = timedelta(hours=1)


class Reservation(BaseModel):
    """One model call in flight."""

    amount_usd: float
    at: datetime
    turn_workflow_id: str = ""


def day_of(now: datetime) -> str:
    return now.astimezone(UTC).strftime("%Y-%m-%d")


def month_of(now: datetime) -> str:
    return now.astimezone(UTC).strftime("%Y-%m")


def next_turnover(now: datetime) -> datetime:
    """The next UTC midnight: when the day's spend (and on the 1st the month's) starts over."""
    today = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return today + timedelta(days=1)


class LedgerState(BaseModel):
    """What a tenant's ledger carries, also across continue-as-new."""

    tenant: str
    caps: TenantCaps = Field(default_factory=TenantCaps)
    day: str = ""
    month: str = ""
    spent_day_usd: float = 0.0
    spent_month_usd: float = 0.0
    reservations: dict[str, Reservation] = Field(default_factory=dict)
    waiting: list[str] = Field(default_factory=list)
    as_of: datetime | None = None

    def roll(self, now: datetime) -> None:
        """Starts a new day's (and month's) spend when `now` is in a later period; drops
        reservations that outlived any call."""
        day, month = day_of(now), month_of(now)
        if day != self.day:
            self.day, self.spent_day_usd = day, 0.0
        if month != self.month:
            self.month, self.spent_month_usd = month, 0.0
        expired = [k for k, r in self.reservations.items() if now - r.at > RESERVATION_TTL]
        for key in expired:
            del self.reservations[key]
        self.as_of = now

    def reserved_usd(self) -> float:
        return sum(r.amount_usd for r in self.reservations.values())

    def reserve(
        self, key: str, amount_usd: float, now: datetime, turn_workflow_id: str = ""
    ) -> str | None:
        """Reserves `amount_usd` for call `key` (replacing its earlier reservation, if a retry);
        None, or why not (the call is not to be made, nothing is reserved)."""
        self.roll(now)
        self.reservations.pop(key, None)
        refusal = self.refusal(amount_usd)
        if refusal is not None:
            if turn_workflow_id and turn_workflow_id not in self.waiting:
                self.waiting.append(turn_workflow_id)
            return refusal
        self.reservations[key] = Reservation(
            amount_usd=amount_usd, at=now, turn_workflow_id=turn_workflow_id
        )
        # A turn that goes on (the day turned over) needs no word of new caps any more.
        if turn_workflow_id in self.waiting:
            self.waiting.remove(turn_workflow_id)
        return None

    def refusal(self, amount_usd: float) -> str | None:
        """Why a call of maximum cost `amount_usd` would pass a cap, or None."""
        reserved = self.reserved_usd()
        for period, cap, spent in (
            (f"daily cap (UTC day {self.day})", self.caps.usd_per_day, self.spent_day_usd),
            (
                f"monthly cap (UTC month {self.month})",
                self.caps.usd_per_month,
                self.spent_month_usd,
            ),
        ):
            if cap is None:
                continue
            if spent + reserved + amount_usd > cap or spent >= cap:
                return (
                    f"tenant {self.tenant!r} is at its {period} of ${cap:g}: ${spent:.6f} spent, "
                    f"${reserved:.6f} reserved by calls in flight, and this call may cost up to "
                    f"${amount_usd:.6f}"
                )
        return None

    def settle(self, key: str, cost_usd: float, now: datetime) -> None:
        """Call `key` is done and cost `cost_usd`: its reservation ends and the cost is spent in
        the current period (a call settled after midnight counts for the new day)."""
        self.roll(now)
        self.reservations.pop(key, None)
        self.spent_day_usd += cost_usd
        self.spent_month_usd += cost_usd

    def set_caps(self, caps: TenantCaps, now: datetime) -> list[str]:
        """New caps; the turns that waited for them (to be told), no longer waiting."""
        self.roll(now)
        self.caps = caps
        woken, self.waiting = self.waiting, []
        return woken

    def spend(self, now: datetime) -> TenantSpend:
        self.roll(now)
        return TenantSpend(
            tenant=self.tenant,
            caps=self.caps,
            day=self.day,
            spent_day_usd=round(self.spent_day_usd, 10),
            month=self.month,
            spent_month_usd=round(self.spent_month_usd, 10),
            reserved_usd=round(self.reserved_usd(), 10),
            in_flight=len(self.reservations),
            as_of=now,
        )
