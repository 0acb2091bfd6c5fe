"""Scheduled turns: the names a schedule of turns is made of, and what the runtime tells about
one (`ScheduleView`), shared by the library, the console and the HTTP API.

A schedule of turns is a Temporal Schedule whose action starts an `AgentTurnWorkflow`: its
id is the schedule's name, each run's workflow id `schedule:<name>-<time>` (Temporal appends
the time), and each run carries the `TemporalScheduledById` search attribute, which the turn
reports as `schedule`. Pure: no I/O.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Final, Literal

from temporalio.common import SearchAttributeKey
from turnkeeper.contracts.contract_model import ContractModel
from turnkeeper.contracts.turn import TurnRequest
from turnkeeper.contracts.turn_ids import SCHEDULE_RUN_ID_PREFIX

Overlap = Literal["skip", "buffer", "allow"]
OVERLAPS: Final[dict[str, str]] = {
    "skip": "a tick while a run is still going starts nothing",
    "buffer": "a tick while a run is still going starts one run once it ends",
    "allow": "every tick starts a run, beside those still going",
}
DEFAULT_OVERLAP: Final = "skip"

# A schedule's name: a letter or digit, then letters, digits and `. _ -`, at most 150
# characters, so that `schedule:<name>-<time>` stays a turn id (at most 200 characters) and the
# name fits a URL path segment as it is.
SCHEDULE_NAME_PATTERN: Final = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,149}$"
_SCHEDULE_NAME = re.compile(SCHEDULE_NAME_PATTERN)

# `--every`: Go-style durations (`90s`, `15m`, `1h30m`, `7d`), what `temporal schedule create
# --interval` takes; pydantic reads ISO 8601 (`PT1H`), which few people write by hand.
_UNITS: Final = {"w": 604_800, "d": 86_400, "h": 3_600, "m": 60, "s": 1}
_DURATION = re.compile(r"^(?:\d+[wdhms])+$")
_PART = re.compile(r"(\d+)([wdhms])")
MIN_EVERY: Final = timedelta(seconds=1)

# Set by Temporal's scheduler on every run it starts: the schedule's id.
SCHEDULED_BY: Final = SearchAttributeKey.for_keyword("TemporalScheduledById")


class InvalidSchedule(ValueError):
    """A schedule that cannot be created as given: the message names the option and why."""


def schedule_name_problem(name: str) -> str | None:
    """Why no schedule may be named `name` (one sentence), or None when it may."""
    if _SCHEDULE_NAME.match(name):
        return None
    return (
        f"schedule name {name[:160]!r} is not one: a letter or digit, then letters, digits and "
        "'. _ -', at most 150 characters"
    )


def run_id_base(name: str) -> str:
    """The workflow id the schedule's action names; Temporal appends `-<time>` to each run's."""
    return f"{SCHEDULE_RUN_ID_PREFIX}{name}"


def parse_every(text: str) -> timedelta:
    """`text` (`30s`, `15m`, `1h30m`, `7d`, `2w`) as a duration of at least a second.

    Raises:
        InvalidSchedule: Not such a duration, or under a second.
    """
    compact = text.strip().lower()
    if not _DURATION.match(compact):
        raise InvalidSchedule(
            f"--every {text!r}: not a duration; write a number and a unit, e.g. 30s, 15m, "
            "1h30m, 7d or 2w"
        )
    seconds = sum(int(amount) * _UNITS[unit] for amount, unit in _PART.findall(compact))
    if seconds < MIN_EVERY.total_seconds():
        raise InvalidSchedule(f"--every {text!r}: a schedule ticks at most once a second")
    return timedelta(seconds=seconds)


def every_text(every: timedelta) -> str:
    """`every` written as `parse_every` reads it (`1h30m`, `7d`)."""
    seconds, parts = int(every.total_seconds()), []
    for unit, size in _UNITS.items():
        if unit == "w":
            continue  # 7d reads as it was likely written; 2w as 14d is still plain
        amount, seconds = divmod(seconds, size)
        if amount:
            parts.append(f"{amount}{unit}")
    return "".join(parts) or "0s"


class ScheduledRun(ContractModel):
    """One run a schedule started: a turn."""

    workflow_id: str
    """The turn's workflow id (`schedule:<name>-<time>`)."""
    scheduled_at: datetime
    """The tick it was started for."""
    started_at: datetime
    """When Temporal started it."""


class ScheduleView(ContractModel):
    """A schedule of turns as the library, `turnkeeper schedule show --json` and
    `GET /v1/schedules/{name}` tell it."""

    name: str
    """The schedule's name: its Temporal schedule id."""
    request: TurnRequest
    """The turn each run starts (`tenant` included: every run is billed to it)."""
    cron: str | None = None
    """The cron expression it was created with (UTC), if any."""
    every: str | None = None
    """The interval it ticks at (`1h30m`, `7d`), if any."""
    overlap: str = DEFAULT_OVERLAP
    """What a tick does while a run is still going: `skip`, `buffer` or `allow` (or Temporal's
    own name of a policy set elsewhere, lower case)."""
    paused: bool = False
    """Paused: no tick starts a run (`trigger` still does)."""
    note: str = ""
    """The note of its last pause or resume."""
    task_queue: str
    """The workers' queue its runs start on."""
    started_by: str | None = None
    """The identity that created it through the HTTP API (it owns every run); None: created
    otherwise."""
    runs: int = 0
    """How many runs it has started."""
    running: list[str] = []
    """The workflow ids of its runs still going."""
    recent_runs: list[ScheduledRun] = []
    """Its latest runs, oldest first (Temporal keeps the last ten)."""
    next_runs: list[datetime] = []
    """When it ticks next (a paused schedule's too)."""
