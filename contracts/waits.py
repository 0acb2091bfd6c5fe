"""Waiting: the built-in `wait` tool, the events a turn can wait for, and the turns an event
starts.

An agent that lists `wait` in `agent.tools` may park its turn on a durable timer (`until` a time,
for `seconds`) or until an event arrives (`event`, a name). While it waits the turn is in state
`waiting`, the time does not count against its time budget, and `steer` or `interrupt` wake it.
How long one wait may last is the operator's to bound (`TURNKEEPER_MAX_WAIT_S` on the worker).

Events reach turns by key: `POST /v1/agents/{agent_id}/events` (or `turnkeeper.signal_event`)
signals the turn at `event:<agent id>:<key>`, starting it when none runs (signal-with-start), and
the turn drops an event whose `idempotency_id` it has seen, so a webhook's retries deliver once.

Pure functions and models, no I/O: the workflow, the worker and the clients share them.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Any, Final

from pydantic import ConfigDict, Field, JsonValue
from turnkeeper.contracts.contract_model import ContractModel

WAIT_TOOL: Final = "wait"
# The worker variable bounding one wait, in seconds, and its default (30 days).
MAX_WAIT_ENV: Final = "TURNKEEPER_MAX_WAIT_S"
DEFAULT_MAX_WAIT_S: Final = 30 * 24 * 3600.0
# The local activity that reads the bound on the worker: workflow code reads no environment.
ACTIVITY_WAIT_LIMIT: Final = "wait_limit"
# The signal that carries one event to a turn.
SIGNAL_EVENT: Final = "event"
# The turns events start: `event:<agent id>:<key>`, an id the runtime keeps (contracts/turn_ids).
EVENT_ID_PREFIX: Final = "event:"
# What a key and an event name may hold; idempotency ids are free text within a length.
EVENT_KEY_PATTERN: Final = r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$"
EVENT_NAME_PATTERN: Final = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$"
IDEMPOTENCY_ID_MAX: Final = 200
# The memo field of an event-started turn: the idempotency id of the event that started it, so
# that a retry arriving after the turn ended does not start another.
MEMO_STARTING_EVENT: Final = "turnkeeper_starting_event"

WAIT_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "until": {
            "type": "string",
            "description": "An ISO-8601 time with its offset (2026-12-01T09:00:00+00:00).",
        },
        "seconds": {"type": "number", "description": "How long to wait, in seconds."},
        "event": {
            "type": "string",
            "description": "The name of an event to wait for; its payload is the result. "
            "With `until` or `seconds`, they bound how long to wait for it.",
        },
        "reason": {"type": "string", "description": "Why the turn waits, shown to people."},
    },
    "required": ["reason"],
    "additionalProperties": False,
}
WAIT_DESCRIPTION: Final = (
    "Pause this task until a time, for a number of seconds, or until a named event arrives. "
    "Give exactly one of `until` or `seconds`, or `event` (optionally bounded by one of "
    "them). The wait may end early when a person steers the task."
)


class WaitingFor(ContractModel):
    """One `wait` call in progress: what the status query's `waiting_for` lists."""

    call_id: str
    """The `wait` call's tool-call id."""
    reason: str = ""
    """Why the agent waits, as the model said."""
    since: datetime
    """When the wait began."""
    until: datetime | None = None
    """When the wait ends by itself (None: an event wait with no bound, which the operator's
    maximum ends)."""
    event: str | None = None
    """The event it waits for, if any."""


class AgentEvent(ContractModel):
    """The `event` signal: one event for the turn of its key."""

    model_config = ConfigDict(extra="forbid")
    key: str = Field(pattern=EVENT_KEY_PATTERN)
    """Which turn it is for: the turn at `event:<agent id>:<key>`."""
    event: str = Field(pattern=EVENT_NAME_PATTERN)
    """Its name, as `wait {"event": …}` names it."""
    idempotency_id: str = Field(min_length=1, max_length=IDEMPOTENCY_ID_MAX)
    """The sender's id of this delivery: a second event with it is dropped."""
    payload: JsonValue = None
    """What the waiting agent reads as the tool's result."""


class WaitPlan(ContractModel):
    """A valid `wait` call, as the turn carries it out."""

    seconds: float | None
    """How long the timer runs (None: only an event ends it, bounded by the maximum)."""
    event: str | None = None
    """The event it waits for, if any."""
    reason: str = ""
    """Why, as the model said."""


def wait_line(wait: WaitingFor) -> str:
    """One line saying what a wait waits for and until when (the Web UI, `turnkeeper waiting`)."""
    target = f"event `{wait.event}`" if wait.event else "its time"
    until = f" until {wait.until:%Y-%m-%d %H:%M:%S} UTC" if wait.until else ""
    reason = f": {wait.reason}" if wait.reason else ""
    return f"waiting for {target}{until} (call `{wait.call_id}`){reason}"


def event_workflow_id(agent_id: str, key: str) -> str:
    """The turn of `agent_id`'s event key `key`."""
    return f"{EVENT_ID_PREFIX}{agent_id}:{key}"


def wait_plan(
    arguments: dict[str, Any], now: datetime, max_wait_s: float
) -> tuple[WaitPlan | None, str | None]:
    """The wait `arguments` ask for, or the sentence saying why it cannot happen (for the model
    to read: an unparsable time, one in the past, beyond the operator's maximum, no target)."""
    until, seconds, event = (arguments.get(k) for k in ("until", "seconds", "event"))
    reason = str(arguments.get("reason") or "")
    if until is not None and seconds is not None:
        return None, "Give `until` or `seconds`, not both."
    if until is None and seconds is None and event is None:
        return None, "Give `until`, `seconds` or `event`: what the wait is for."
    if event is not None and (not isinstance(event, str) or not event.strip()):
        return None, "`event` must name an event (a non-empty string)."
    length: float | None = None
    if until is not None:
        at, problem = _parsed_time(until)
        if at is None:
            return None, problem
        length = (at - now).total_seconds()
        if length <= 0:
            return None, f"`until` {until} is in the past (it is now {now.isoformat()})."
    elif seconds is not None:
        if isinstance(seconds, bool) or not isinstance(seconds, int | float):
            return None, "`seconds` must be a number."
        if not math.isfinite(seconds) or seconds <= 0:
            return None, "`seconds` must be a positive number."
        length = float(seconds)
    if length is not None and length > max_wait_s:
        return None, (
            f"A wait of {_spoken(length)} is longer than this runtime allows "
            f"({_spoken(max_wait_s)}, the operator's maximum): wait less, then again."
        )
    return WaitPlan(seconds=length, event=event, reason=reason), None


def _parsed_time(text: Any) -> tuple[datetime | None, str]:
    if not isinstance(text, str):
        return None, "`until` must be an ISO-8601 time as a string."
    try:
        at = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None, (
            f"`until` {text[:80]!r} is not an ISO-8601 time; write one with its offset, "
            "like 2026-12-01T09:00:00+00:00."
        )
    if at.tzinfo is None:
        return None, f"`until` {text[:80]!r} has no offset; add one (+00:00 for UTC)."
    return at, ""


def _spoken(seconds: float) -> str:
    """A length people read at once: 3 days, 90 s."""
    delta = timedelta(seconds=seconds)
    if delta >= timedelta(days=1):
        return f"{seconds / 86400:g} days"
    if delta >= timedelta(hours=1):
        return f"{seconds / 3600:g} h"
    return f"{seconds:g} s"


class WaitLimitInput(ContractModel):
    """The `wait_limit` local activity's input: the call it is asked for."""

    call_id: str
    """The `wait` call that asks."""


class WaitLimit(ContractModel):
    """The `wait_limit` local activity's result: the worker's bound on one wait."""

    max_wait_s: float
    """The longest one wait may last, in seconds (`TURNKEEPER_MAX_WAIT_S`)."""
