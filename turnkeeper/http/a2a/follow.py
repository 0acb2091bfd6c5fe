"""A turn followed as an A2A task stream, read from the turn's own event stream
(`TurnService.events`), so the first token reaches the caller as soon as the turn publishes
it: the task, then its answer as it is written (the `answer` artifact, appended to), its tool
calls as `working` status messages, and at last the status it stops at, `input-required` when
a call waits for a decision or the state it ended in, with the whole answer."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Final

from a2a.server.events.event_queue import Event
from a2a.types import Task, TaskState, TaskStatus

from turnkeeper.contracts.events import TurnEvent
from turnkeeper.http.a2a.wire import (
    answer_of,
    answer_update,
    status_update,
    task_of,
    working_update,
)
from turnkeeper.http.mcp.turn_view import TurnView, view
from turnkeeper.http.turns import TurnService

# How long the turn's stream may be quiet before where the turn stands is read from Temporal:
# a sub-agent's call that waits says so in the child's stream only.
QUIET_CHECK_S: Final = 5.0
# The events after which the turn may have stopped: where it stands is then read from Temporal.
_STOPS: Final = frozenset({"approval_requested", "turn_finished", "turn_failed"})


class Follower:
    """Follows turns of `turns` for the A2A handler."""

    def __init__(self, turns: TurnService) -> None:
        self.turns = turns

    async def stream(
        self, workflow_id: str, context_id: str, after_call: str | None, *, fresh: bool = True
    ) -> AsyncIterator[Event]:
        """The task's events until it ends or waits for a decision. `after_call`: the call
        just decided, whose turn is followed from its approval on (what came before was sent
        already); `fresh`: the turn was just started or answered here, so it works (the first
        event costs no round trip to Temporal), else its task is read first."""
        if fresh:
            yield Task(
                id=workflow_id,
                context_id=context_id,
                status=TaskStatus(state=TaskState.TASK_STATE_WORKING),
            )
        else:
            first = await view(self.turns, workflow_id)
            yield task_of(first, context_id)
            if first.status != "working":
                return
        text = ""
        waiting_for = after_call
        events = self.turns.events(workflow_id, None)
        pending = asyncio.ensure_future(anext(events, None))
        try:
            while True:
                done, _ = await asyncio.wait({pending}, timeout=QUIET_CHECK_S)
                if done:
                    item = pending.result()
                    if item is None:
                        break
                    pending = asyncio.ensure_future(anext(events, None))
                    event = item[1]
                    if waiting_for is not None:
                        # Replayed up to the decided call's approval: sent before.
                        if event.kind == "approval_requested" and event.call_id == waiting_for:
                            waiting_for = None
                        continue
                    if event.kind not in _STOPS:
                        for update in self._updates(workflow_id, context_id, event, text):
                            yield update
                        text = _answer_so_far(text, event)
                        continue
                # A stop, or quiet: a sub-agent's call waits (its approval is in the child's
                # stream, not here), or the replay after a decision has caught up.
                waiting_for = None
                turn = await view(self.turns, workflow_id)
                if turn.status != "working":
                    for last in _last(turn, context_id):
                        yield last
                    return
        finally:
            pending.cancel()
        for last in _last(await view(self.turns, workflow_id), context_id):
            yield last

    @staticmethod
    def _updates(workflow_id: str, context_id: str, event: TurnEvent, text: str) -> list[Event]:
        """What an event of a working turn shows the caller, given the answer sent so far."""
        if event.kind == "text_delta" and event.text:
            return [answer_update(workflow_id, context_id, event.text, append=bool(text))]
        if event.kind == "text_discarded" and event.discarded_chars:
            # A retried model call takes back what its failed attempt streamed.
            kept = _answer_so_far(text, event)
            return [answer_update(workflow_id, context_id, kept, append=False)]
        if event.kind in _STEPS:
            return [working_update(workflow_id, context_id, _STEPS[event.kind](event))]
        return []

    async def settled(self, workflow_id: str, context_id: str, after_call: str | None) -> Task:
        """The task once the turn has ended or waits for a decision (a blocking send)."""
        async for _ in self.stream(workflow_id, context_id, after_call):
            pass
        return task_of(await view(self.turns, workflow_id), context_id)


def _answer_so_far(text: str, event: TurnEvent) -> str:
    if event.kind == "text_delta" and event.text:
        return text + event.text
    if event.kind == "text_discarded" and event.discarded_chars:
        return text[: max(0, len(text) - event.discarded_chars)]
    return text


def _last(turn: TurnView, context_id: str) -> list[Event]:
    """What ends a stream: the whole answer, when the turn has ended with one, then the status
    it stopped at."""
    answer = answer_of(turn)
    events: list[Event] = []
    if answer is not None:
        events.append(answer_update(turn.workflow_id, context_id, answer, append=False, last=True))
    events.append(status_update(turn, context_id))
    return events


def _tool_started(event: TurnEvent) -> str:
    return f"calling {event.tool} (call_id {event.call_id})"


def _tool_finished(event: TurnEvent) -> str:
    return f"{event.tool} {'failed' if event.is_error else 'answered'} (call_id {event.call_id})"


def _subagent_started(event: TurnEvent) -> str:
    return f"sub-agent {event.tool} started ({event.workflow_id})"


def _subagent_finished(event: TurnEvent) -> str:
    return f"sub-agent {event.tool} ended {event.outcome or ''} ({event.workflow_id})".strip()


_STEPS: Final = {
    "tool_call_started": _tool_started,
    "tool_call_finished": _tool_finished,
    "subagent_started": _subagent_started,
    "subagent_finished": _subagent_finished,
}
