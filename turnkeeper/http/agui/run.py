"""One AG-UI run over a turn: `RUN_STARTED`, the turn's events as they happen (read straight from
its event stream, `TurnService.events`, so the first token goes out as soon as the turn has
it), and the end: `RUN_FINISHED` with the turn's result once it has ended, `RUN_FINISHED` with an
interrupt outcome once it waits for the caller's answer, or `RUN_ERROR` when it failed.

A run that answers the interrupts of the run before (`resume`) goes on with the same turn from
where that run stopped: it reads the turn's stream from the start without sending anything up
to the last of the answered calls' approval requests (the interrupted run showed those), then
sends the rest. Nothing is kept in the server between the two runs: another replica of
`turnkeeper serve` answers the second as well.

Whether the turn waits for the caller is asked of its status after each event after which it
may (an approval request, a tool call's or a sub-agent's start) and whenever the stream has
been quiet for `QUIET_S` (a sub-agent's approval shows in its parent's status, not in its
parent's events).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Final

from ag_ui.core import (
    BaseEvent,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunStartedEvent,
    TokenUsage,
)
from ag_ui.encoder import EventEncoder
from temporalio.service import RPCError

from turnkeeper.client.turns import TurnOutcome
from turnkeeper.contracts.events import TurnEvent
from turnkeeper.contracts.signals import PendingCall
from turnkeeper.contracts.turn import AgentReport
from turnkeeper.http.access import visible_turn
from turnkeeper.http.agui.interrupts import METADATA_KEY, answerable, interrupt
from turnkeeper.http.agui.translation import Translation
from turnkeeper.http.errors import ApiError
from turnkeeper.http.mcp.turn_view import outcome
from turnkeeper.http.tokens import Identity
from turnkeeper.http.turns import StartedTurn, TurnService

# The AG-UI protocol version this endpoint speaks (RUN_STARTED.protocolVersion).
PROTOCOL_VERSION: Final = "1.0"
# How long the stream may be quiet before the turn's status is asked whether it waits.
QUIET_S: Final = 2.0
# A comment line after this much quiet (under the idle timeouts of common proxies, as the API's
# event stream); AG-UI clients read only `data:` lines.
KEEPALIVE_S: Final = 15.0
# Events after which the turn may wait for a person.
_MAY_WAIT: Final = frozenset({"approval_requested", "tool_call_started", "subagent_started"})
_ENDED: Final = frozenset({"turn_finished", "turn_failed"})


@dataclass(frozen=True)
class RunIds:
    """The caller's names of the run: its thread (the conversation) and its run id."""

    thread_id: str
    run_id: str


@dataclass
class TurnRun:
    """One run over the turn `workflow_id`, as `identity` follows it."""

    turns: TurnService
    identity: Identity
    workflow_id: str
    ids: RunIds
    answered: list[PendingCall] = field(default_factory=list)
    """Of a run that resumes the turn: the calls it answered (where the run before stopped)."""
    _turn: StartedTurn | None = None

    async def events(self) -> AsyncIterator[BaseEvent | None]:
        """The run's AG-UI events; None when the turn has been quiet for `KEEPALIVE_S`."""
        translation = Translation(self.workflow_id)
        yield RunStartedEvent(
            thread_id=self.ids.thread_id,
            run_id=self.ids.run_id,
            protocol_version=PROTOCOL_VERSION,
            metadata={METADATA_KEY: {"workflow_id": self.workflow_id}},
        )
        anchors = _Anchors(self.answered)
        stream = _Quiet(self.turns.events(self.workflow_id, None))
        async for event in stream:
            if event is None and not anchors.reached:
                continue  # still reading what the interrupted run showed
            if event is not None and anchors.before_resume(event):
                translation.events(event)  # shown by the interrupted run: state only
                if anchors.reached:
                    translation.suspend()
                    for resumed in translation.resume():
                        yield resumed
                    event = None  # caught up: ask whether other calls still wait
                else:
                    continue
            if event is not None:
                for translated in translation.events(event):
                    yield translated
                if event.kind in _ENDED:
                    break
            if event is None or event.kind in _MAY_WAIT:
                waiting = await self._waiting()
                if waiting:
                    for closing in self._interrupted(translation, waiting):
                        yield closing
                    return
                if stream.keepalive_due():
                    yield None
        for ending in await self._ended(translation):
            yield ending

    async def _waiting(self) -> list[PendingCall]:
        """The calls waiting for the caller's answer now (none when the status cannot be read:
        the stream goes on, and says how the turn ends)."""
        try:
            if self._turn is None:
                self._turn = await visible_turn(self.turns, self.workflow_id, self.identity)
            status = await self.turns.status(self.workflow_id)
        except ApiError:
            return []
        return answerable(self.identity, self._turn, status)

    def _interrupted(self, translation: Translation, waiting: list[PendingCall]) -> list[BaseEvent]:
        assert self._turn is not None
        closing: list[BaseEvent] = []
        for call in waiting:
            if call.workflow_id is None:  # announced before the interrupt that names it
                closing.extend(translation.announce(call.call_id, call.tool, call.input))
        closing.extend(translation.suspend())
        translation.budgets.pending = [
            {"call_id": call.call_id, "tool": call.tool, "kind": call.kind} for call in waiting
        ]
        outcome_ = RunFinishedInterruptOutcome(
            interrupts=[interrupt(self._turn, call) for call in waiting]
        )
        return [*closing, translation.budgets.snapshot(), self._finished(outcome=outcome_)]

    async def _ended(self, translation: Translation) -> list[BaseEvent]:
        closing = translation.suspend()
        try:
            ended = await outcome(self.turns, self.workflow_id)
        except ApiError as error:
            return [*closing, RunErrorEvent(message=error.message, code="unavailable")]
        return [*closing, *self._end(translation, ended)]

    def _end(self, translation: Translation, ended: TurnOutcome) -> list[BaseEvent]:
        if ended.failure is not None:
            return [RunErrorEvent(message=ended.failure.message, code=ended.failure.type)]
        report = ended.report
        assert report is not None
        translation.budgets.cost_usd = report.cost_usd
        translation.budgets.pending = []
        snapshot = translation.budgets.snapshot()
        if report.outcome == "cancelled":
            return [snapshot, self._finished(outcome=RunFinishedCancelledOutcome())]
        # A resumed run's usage would count the interrupted run's calls again (AG-UI: each run
        # reports its own calls); the result's cost is the turn's either way.
        usage = None if self.answered else [_usage(report)]
        return [snapshot, self._finished(result=_result(self.workflow_id, report), usage=usage)]

    def _finished(self, **fields: object) -> RunFinishedEvent:
        return RunFinishedEvent(
            thread_id=self.ids.thread_id,
            run_id=self.ids.run_id,
            metadata={METADATA_KEY: {"workflow_id": self.workflow_id}},
            **fields,
        )


def _result(workflow_id: str, report: AgentReport) -> dict[str, object]:
    """RUN_FINISHED's result: the turn's answer, how it ended and what it cost."""
    return {
        "output": report.output,
        "structured_output": report.structured_output,
        "outcome": report.outcome,
        "cost_usd": report.cost_usd,
        "workflow_id": workflow_id,
    }


def _usage(report: AgentReport) -> TokenUsage:
    # AG-UI counts cache reads and writes inside inputTokens; the report beside them.
    used = report.usage
    inputs = used.input_tokens + used.cache_read_tokens + used.cache_write_tokens
    return TokenUsage(
        model=report.models_used[0] if len(report.models_used) == 1 else None,
        input_tokens=inputs,
        output_tokens=used.output_tokens,
        total_tokens=inputs + used.output_tokens,
        cached_input_tokens=used.cache_read_tokens,
        cache_write_input_tokens=used.cache_write_tokens,
    )


class _Anchors:
    """Where a resumed run starts sending: after the event of each answered call that the
    interrupted run stopped at (its approval request; for a sub-agent's call, the start of the
    sub-agent it waits in)."""

    def __init__(self, answered: list[PendingCall]) -> None:
        self._own = {call.call_id for call in answered if call.workflow_id is None}
        self._children = {call.workflow_id for call in answered if call.workflow_id is not None}

    @property
    def reached(self) -> bool:
        return not self._own and not self._children

    def before_resume(self, event: TurnEvent) -> bool:
        """Whether `event` was shown by the interrupted run (the last such one reaches the
        point where this run goes on)."""
        if self.reached:
            return False
        if event.kind == "approval_requested":
            self._own.discard(event.call_id or "")
        elif event.kind == "subagent_started" and event.workflow_id:
            # A grandchild's id extends its parent's (`<parent>/<name>-<k>`).
            started = event.workflow_id
            self._children = {
                child
                for child in self._children
                if child != started and not child.startswith(started + "/")
            }
        return True


class _Quiet:
    """The turn's events, with None whenever none came for `QUIET_S`."""

    def __init__(self, events: AsyncIterator[tuple[int, TurnEvent]]) -> None:
        self._events = events
        self._quiet_s = 0.0

    def keepalive_due(self) -> bool:
        if self._quiet_s < KEEPALIVE_S:
            return False
        self._quiet_s = 0.0
        return True

    async def __aiter__(self) -> AsyncIterator[TurnEvent | None]:
        pending = asyncio.ensure_future(anext(self._events))
        try:
            while True:
                done, _ = await asyncio.wait({pending}, timeout=QUIET_S)
                if not done:
                    self._quiet_s += QUIET_S
                    yield None
                    continue
                try:
                    _, event = pending.result()
                except StopAsyncIteration:
                    return
                self._quiet_s = 0.0
                yield event
                pending = asyncio.ensure_future(anext(self._events))
        finally:
            pending.cancel()


async def sse(run: TurnRun) -> AsyncIterator[str]:
    """The run as Server-Sent Events, in AG-UI's own encoding."""
    encoder = EventEncoder()
    try:
        async for event in run.events():
            yield ": keepalive\n\n" if event is None else encoder.encode(event)
    except (ApiError, RPCError) as error:
        # Temporal failed the stream's read midway: the client learns it as AG-UI says errors,
        # rather than as a connection cut short.
        yield encoder.encode(RunErrorEvent(message=str(error), code="unavailable"))
