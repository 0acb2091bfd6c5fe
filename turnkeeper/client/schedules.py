"""Turns on a clock, from Python: a Temporal Schedule whose action starts an ordinary turn.

client = await turnkeeper.connect()
weekly = await turnkeeper.schedule_turn(
    client,
    "ticket-digest",
    agent={"id": "support", "model": "anthropic:claude-sonnet-4-6"},
    task={"id": "digest", "input": "Summarise this week's tickets"},
    tenant="acme",
    cron="0 9 * * MON",
)
await weekly.trigger()                       # one run now, beside the clock
print((await weekly.describe()).next_runs)

The schedule is Temporal's own: `temporal schedule describe --schedule-id ticket-digest` and the
Web UI show and edit it. Each run is a turn at `schedule:<name>-<time>` whose status and report
name the schedule (`schedule`).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from datetime import timedelta
from typing import Any, Final

from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    ScheduleDescription,
    ScheduleIntervalSpec,
    ScheduleListActionStartWorkflow,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
    ScheduleState,
)
from temporalio.common import Priority, SearchAttributePair, TypedSearchAttributes
from temporalio.service import RPCError, RPCStatusCode

from turnkeeper.client.errors import InvalidTurnRequest
from turnkeeper.client.turns import given_request, request_payload
from turnkeeper.contracts.names import (
    DEFAULT_TASK_QUEUE,
    SA_STARTED_BY,
    TASK_QUEUE_ENV,
    WORKFLOW_TYPE,
)
from turnkeeper.contracts.request_checks import request_problem
from turnkeeper.contracts.schedules import (
    DEFAULT_OVERLAP,
    OVERLAPS,
    InvalidSchedule,
    ScheduledRun,
    ScheduleView,
    every_text,
    parse_every,
    run_id_base,
    schedule_name_problem,
)
from turnkeeper.contracts.search_attributes import STARTED_BY, identity_search_attributes
from turnkeeper.contracts.turn import TurnRequest

_POLICIES: Final = {
    "skip": ScheduleOverlapPolicy.SKIP,
    "buffer": ScheduleOverlapPolicy.BUFFER_ONE,
    "allow": ScheduleOverlapPolicy.ALLOW_ALL,
}
_OVERLAP_NAMES: Final = {policy: name for name, policy in _POLICIES.items()}
# The schedule's memo: its clock as it was given (Temporal keeps a cron expression only as the
# calendar it parsed it into).
MEMO_KEY: Final = "turnkeeper"
# How many schedules `list_schedules` describes at once.
DESCRIBES_AT_ONCE: Final = 16


class ScheduleNotFound(LookupError):
    """No schedule of turns has this name (a schedule of other workflows is none either)."""


class ScheduleTaken(Exception):
    """A schedule with this name exists already (delete it first, or choose another name)."""


class TurnSchedule:
    """One schedule of turns, by name: read it, pause, resume, trigger or delete it."""

    def __init__(self, client: Client, name: str) -> None:
        self.client = client
        self.name = name
        self.handle = client.get_schedule_handle(name)

    async def describe(self) -> ScheduleView:
        """What it starts, when, its state, its latest and next runs.

        Raises:
            ScheduleNotFound: No schedule of turns by this name.
        """
        return await view_of(self.client, await self._description())

    async def pause(self, note: str = "") -> None:
        """No tick starts a run until `resume` (`trigger` still does)."""
        await self._description()
        await self._call(self.handle.pause(note=note or "paused by turnkeeper"))

    async def resume(self, note: str = "") -> None:
        await self._description()
        await self._call(self.handle.unpause(note=note or "resumed by turnkeeper"))

    async def trigger(self) -> None:
        """Start one run now, as a tick would (under the schedule's overlap policy)."""
        await self._description()
        await self._call(self.handle.trigger())

    async def delete(self) -> None:
        """Delete the schedule; runs already started go on."""
        await self._description()
        await self._call(self.handle.delete())

    async def _description(self) -> ScheduleDescription:
        described = await self._call(self.handle.describe())
        if not _starts_turns(described.schedule.action):
            raise ScheduleNotFound(f"no schedule of turns named {self.name!r}")
        return described

    async def _call(self, call: Any) -> Any:
        try:
            return await call
        except RPCError as error:
            if error.status == RPCStatusCode.NOT_FOUND:
                raise ScheduleNotFound(f"no schedule of turns named {self.name!r}") from None
            raise


async def schedule_turn(
    client: Client,
    name: str,
    request: TurnRequest | Mapping[str, Any] | None = None,
    /,
    *,
    cron: str | None = None,
    every: str | timedelta | None = None,
    overlap: str = DEFAULT_OVERLAP,
    paused: bool = False,
    task_queue: str | None = None,
    started_by: str | None = None,
    **fields: Any,
) -> TurnSchedule:
    """Create a schedule that starts the turn `request` at each tick, and return its handle.

    Args:
        client: From `turnkeeper.connect()`: its data converter stores the request as every
            turn's is (encrypted with `TURNKEEPER_ENCRYPTION_KEYS`).
        name: The schedule's id: a letter or digit, then letters, digits and `. _ -`, at most
            150 characters. Runs are turns at `schedule:<name>-<time>`.
        request: A `TurnRequest` or its JSON; or leave it out and pass its fields. Its
            `tenant` bills every run.
        cron: A cron expression (UTC; five fields, or `@daily`, `@weekly`, …).
        every: An interval: a `timedelta` or `30s`, `15m`, `1h30m`, `7d`, `2w`.
        overlap: What a tick does while a run is still going: `skip` (default), `buffer`
            (one run waits for it) or `allow`.
        paused: Create it paused (`resume` starts the clock; `trigger` runs it once).
        task_queue: The workers' queue (default: `AGENT_TASK_QUEUE` or `agent-turns`).
        started_by: The identity a server signed in as the owner (the HTTP API passes its
            caller's): the schedule's and each run's `StartedBy`.

    Raises:
        InvalidSchedule: A bad name, overlap, cron expression or interval, or neither or
            both of `cron` and `every` (nothing is created).
        InvalidTurnRequest: The request does not validate (nothing is created).
        ScheduleTaken: A schedule with this name exists.
    """
    problem = schedule_name_problem(name)
    if problem:
        raise InvalidSchedule(problem)
    if overlap not in OVERLAPS:
        raise InvalidSchedule(f"--overlap {overlap!r}: one of {', '.join(OVERLAPS)}")
    turn = _turn_request(request, fields)
    spec, clock = _spec(cron, every)
    action = ScheduleActionStartWorkflow(
        WORKFLOW_TYPE,
        request_payload(turn),
        id=run_id_base(name),
        task_queue=task_queue or os.environ.get(TASK_QUEUE_ENV) or DEFAULT_TASK_QUEUE,
        typed_search_attributes=identity_search_attributes(turn, started_by),
        static_summary=turn.summary(),
        priority=Priority(fairness_key=turn.tenant) if turn.tenant else Priority.default,
    )
    schedule = Schedule(
        action=action,
        spec=spec,
        policy=SchedulePolicy(overlap=_POLICIES[overlap]),
        state=ScheduleState(paused=paused, note="created paused" if paused else ""),
    )
    owner = [SearchAttributePair(STARTED_BY, started_by)] if started_by else []
    try:
        await client.create_schedule(
            name,
            schedule,
            memo={MEMO_KEY: clock},
            search_attributes=TypedSearchAttributes(owner),
        )
    except ScheduleAlreadyRunningError:
        raise ScheduleTaken(f"a schedule named {name!r} exists already") from None
    except RPCError as error:
        if error.status != RPCStatusCode.INVALID_ARGUMENT:
            raise
        given = f"--cron {cron!r}" if cron is not None else f"--every {clock['every']!r}"
        raise InvalidSchedule(f"{given}: {error.message}") from None
    return TurnSchedule(client, name)


def turn_schedule(client: Client, name: str) -> TurnSchedule:
    """The handle of a schedule of turns created earlier, by name."""
    return TurnSchedule(client, name)


async def list_schedules(client: Client, *, started_by: str | None = None) -> list[ScheduleView]:
    """Every schedule of turns in the namespace (created by `started_by` only, when given), by
    name. The listing is Temporal's visibility: a schedule shows there a moment after it is
    created."""
    if started_by is not None and (
        any(char in started_by for char in "'\"\\") or not started_by.isprintable()
    ):
        # A visibility query is text: no escaping is trusted to keep a name a string.
        raise ValueError(f"{started_by!r} cannot be used in a visibility query")
    query = f"{SA_STARTED_BY} = '{started_by}'" if started_by is not None else None
    found = [
        listed.id
        async for listed in await client.list_schedules(query)
        if listed.schedule is not None and _starts_turns(listed.schedule.action)
    ]
    describing = asyncio.Semaphore(DESCRIBES_AT_ONCE)

    async def view(name: str) -> ScheduleView | None:
        async with describing:
            try:
                return await TurnSchedule(client, name).describe()
            except ScheduleNotFound:
                return None  # deleted since the listing

    views = await asyncio.gather(*(view(name) for name in sorted(found)))
    return [v for v in views if v is not None]


async def view_of(client: Client, described: ScheduleDescription) -> ScheduleView:
    """A schedule of turns as `ScheduleView` tells it."""
    action = described.schedule.action
    assert isinstance(action, ScheduleActionStartWorkflow)  # _starts_turns checked it
    [request] = await client.data_converter.decode(action.args, [TurnRequest])
    memo = await described.memo()
    clock = memo.get(MEMO_KEY) or {}
    intervals = described.schedule.spec.intervals
    policy = described.schedule.policy.overlap
    info = described.info
    return ScheduleView(
        name=described.id,
        request=request,
        cron=clock.get("cron"),
        every=every_text(intervals[0].every) if intervals else None,
        overlap=_OVERLAP_NAMES.get(policy) or policy.name.lower(),
        paused=described.schedule.state.paused,
        note=described.schedule.state.note or "",
        task_queue=action.task_queue,
        started_by=described.typed_search_attributes.get(STARTED_BY),
        runs=info.num_actions,
        running=[run.workflow_id for run in info.running_actions],
        recent_runs=[
            ScheduledRun(
                workflow_id=run.action.workflow_id,
                scheduled_at=run.scheduled_at,
                started_at=run.started_at,
            )
            for run in info.recent_actions
            if hasattr(run.action, "workflow_id")
        ],
        next_runs=list(info.next_action_times),
    )


def _starts_turns(action: object) -> bool:
    kinds = (ScheduleActionStartWorkflow, ScheduleListActionStartWorkflow)
    return isinstance(action, kinds) and action.workflow == WORKFLOW_TYPE


def _turn_request(
    request: TurnRequest | Mapping[str, Any] | None, fields: dict[str, Any]
) -> TurnRequest:
    turn = given_request(request, fields)
    problem = request_problem(turn) or (
        "parent: is set by the runtime on a sub-agent's turn; leave it out" if turn.parent else None
    )
    if problem:
        raise InvalidTurnRequest(f"invalid turn request: {problem}")
    return turn


def _spec(cron: str | None, every: str | timedelta | None) -> tuple[ScheduleSpec, dict[str, str]]:
    """The schedule's spec and its memo: a cron expression or an interval, never both."""
    if (cron is None) == (every is None):
        raise InvalidSchedule("give one of --cron and --every")
    if cron is not None:
        if not cron.strip():
            raise InvalidSchedule("--cron '': empty; e.g. '0 9 * * MON' (UTC)")
        return ScheduleSpec(cron_expressions=[cron]), {"cron": cron}
    interval = every if isinstance(every, timedelta) else parse_every(str(every))
    if interval < timedelta(seconds=1):
        raise InvalidSchedule(f"--every {interval}: a schedule ticks at most once a second")
    text = every_text(interval)
    return ScheduleSpec(intervals=[ScheduleIntervalSpec(every=interval)]), {"every": text}
