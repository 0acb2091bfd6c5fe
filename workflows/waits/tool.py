"""A `wait` call carried out: one durable timer (`workflow.wait_condition` with a timeout) that
an event for it, a steer or an interrupt ends early. Nothing polls, so history does not grow
while the turn waits, and the time waited does not count against the time budget (the turn's
`HumanClock`, as for an approval).

Only a turn whose agent lists `wait` in `agent.tools` reaches this code: every command here is
new, and a turn without the tool makes none of them.
"""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Final

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts.messages import ToolResultBlock, ToolUseBlock
    from turnkeeper.contracts.turn import ExternalToolSpec, TurnRequest
    from turnkeeper.contracts.waits import (
        ACTIVITY_WAIT_LIMIT,
        WAIT_DESCRIPTION,
        WAIT_SCHEMA,
        WAIT_TOOL,
        AgentEvent,
        WaitingFor,
        WaitLimit,
        WaitLimitInput,
        wait_plan,
    )
    from turnkeeper.workflows.activity_calls import AnswerModel, execute
    from turnkeeper.workflows.failures import cause_message
    from turnkeeper.workflows.observation.turn_observer import TurnObserver
    from turnkeeper.workflows.turn_state import Turn
    from turnkeeper.workflows.waits.book import Wait, Waits

_LIMIT_OPTIONS: Final = workflow.LocalActivityConfig(
    start_to_close_timeout=timedelta(seconds=10),
    retry_policy=RetryPolicy(maximum_attempts=3),
    summary="wait limit",
)


def offers_wait(request: TurnRequest) -> bool:
    """Whether the agent has the built-in `wait` tool (it names it in `agent.tools`)."""
    return WAIT_TOOL in request.agent.tools


def is_wait_call(turn: Turn, use: ToolUseBlock) -> bool:
    return use.name == WAIT_TOOL and offers_wait(turn.request)


def wait_tools(request: TurnRequest) -> list[ExternalToolSpec]:
    """The `wait` tool's definition, sent to the model like an external tool's (the worker has
    no tool of that name to describe it)."""
    if not offers_wait(request):
        return []
    return [
        ExternalToolSpec(
            name=WAIT_TOOL,
            description=WAIT_DESCRIPTION,
            input_schema=WAIT_SCHEMA,  # type: ignore[arg-type]
        )
    ]


async def wait(
    turn: Turn, use: ToolUseBlock, waits: Waits, observer: TurnObserver
) -> ToolResultBlock:
    """Carries out one `wait` call; its result for the model (an error result when the call
    asks for what cannot be: a bad time, one in the past, beyond the operator's maximum)."""
    limit = await execute(
        ACTIVITY_WAIT_LIMIT,
        WaitLimitInput(call_id=use.id),
        AnswerModel(turn, cause_message),
        result_type=WaitLimit,
        local=_LIMIT_OPTIONS,
    )
    if isinstance(limit, str):
        return _error(use, f"The worker could not say how long a wait may last: {limit}")
    now = workflow.now()
    plan, problem = wait_plan(use.input, now, limit.max_wait_s)
    if plan is None:
        return _error(use, problem or "invalid wait")
    if plan.event is not None:
        earlier = waits.take(plan.event)
        if earlier is not None:
            return _event_result(use, earlier)
    length = plan.seconds if plan.seconds is not None else limit.max_wait_s
    until = now + timedelta(seconds=length)
    status = WaitingFor(
        call_id=use.id, reason=plan.reason, since=now, until=until, event=plan.event
    )
    entry = waits.open(status)
    turn.start_waiting(now)
    observer.call_waits(turn)
    try:
        await workflow.wait_condition(lambda: entry.over, timeout=timedelta(seconds=length))
    except TimeoutError:
        pass
    except asyncio.CancelledError:
        # An interrupt or a cancel: the turn ends with its partial report. Not a `finally`:
        # a parked coroutine that a cache eviction drops runs it outside the workflow's loop.
        _stop(turn, use, waits, observer)
        raise
    _stop(turn, use, waits, observer)
    return _result(use, entry)


def _stop(turn: Turn, use: ToolUseBlock, waits: Waits, observer: TurnObserver) -> None:
    waits.close(use.id)
    turn.stop_waiting(workflow.now())
    observer.call_waits(turn)


def _result(use: ToolUseBlock, entry: Wait) -> ToolResultBlock:
    status = entry.status
    if entry.event is not None:
        return _event_result(use, entry.event)
    now = workflow.now().isoformat()
    if entry.woken_by is not None:
        text = f"Woken early at {now} by {entry.woken_by}; it follows this result."
    elif status.event is not None:
        text = f"No event {status.event!r} arrived by {now}; the wait ended."
    else:
        text = f"Waited until {now}."
    return ToolResultBlock(tool_use_id=use.id, content=text)


def _event_result(use: ToolUseBlock, event: AgentEvent) -> ToolResultBlock:
    body = {"event": event.event, "payload": event.payload}
    return ToolResultBlock(tool_use_id=use.id, content=json.dumps(body, ensure_ascii=False))


def _error(use: ToolUseBlock, text: str) -> ToolResultBlock:
    return ToolResultBlock(tool_use_id=use.id, content=text, is_error=True)
