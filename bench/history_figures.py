"""What a long turn's history came to, and how it ended, from its events alone.

Imports nothing but `temporalio`, so that `bench.peer_long_turn` can use it in the peers'
virtualenv (which holds their frameworks and not ours) and `bench.long_history` in ours: both
sides of the long-turn figure are counted by the same code.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Any

from temporalio.api.enums.v1 import EventType, WorkflowTaskFailedCause
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import WorkflowHandle

# The dev server's defaults (`limit.historySize.error`, `limit.historyCount.error`,
# `limit.blobSize.error`): past these it terminates the run or refuses the command.
HISTORY_SIZE_LIMIT = 50 * 1024 * 1024
HISTORY_COUNT_LIMIT = 50 * 1024
BLOB_SIZE_LIMIT = 2 * 1024 * 1024
# How often a waiting turn is looked at, and how many failed attempts of one workflow task
# make it stuck (a refused payload fails the same way on every attempt).
_POLL_S = 5.0
_STUCK_ATTEMPTS = 3


def _name(event: HistoryEvent) -> str:
    return EventType.Name(event.event_type).removeprefix("EVENT_TYPE_")


def chain_figures(
    runs: Sequence[Sequence[HistoryEvent]], is_model_activity: Callable[[str], bool]
) -> dict[str, Any]:
    """Bytes (Σ `event.ByteSize()`), events and the largest event over every run of a workflow
    id, the model calls that completed, and how the last run ended (`ending`)."""
    largest: HistoryEvent | None = None
    scheduled: dict[int, str] = {}
    model_calls = 0
    run_bytes: list[int] = []
    for run in runs:
        run_bytes.append(sum(event.ByteSize() for event in run))
        scheduled.clear()
        for event in run:
            if largest is None or event.ByteSize() > largest.ByteSize():
                largest = event
            model_calls += _completed_model_call(event, scheduled, is_model_activity)
    return {
        "history_bytes": sum(run_bytes),
        "events": sum(len(run) for run in runs),
        "runs": len(runs),
        "run_bytes": run_bytes,
        "largest_event_bytes": largest.ByteSize() if largest is not None else 0,
        "largest_event_type": _name(largest) if largest is not None else "",
        "model_calls_completed": model_calls,
        "ending": ending(runs[-1] if runs else []),
    }


def _completed_model_call(
    event: HistoryEvent, scheduled: dict[int, str], is_model_activity: Callable[[str], bool]
) -> int:
    if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
        name = event.activity_task_scheduled_event_attributes.activity_type.name
        scheduled[event.event_id] = name
    elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
        name = scheduled.get(event.activity_task_completed_event_attributes.scheduled_event_id, "")
        return int(is_model_activity(name))
    return 0


def ending(events: Sequence[HistoryEvent]) -> dict[str, str]:
    """How a run ended: its last event's type, and, when it did not complete, the reason the
    server gave (a termination's reason, a failure's message) and the last workflow task
    failure (its cause and message), which is where a refused oversized payload shows."""
    found: dict[str, str] = {"last_event": _name(events[-1]) if events else ""}
    for event in events:
        kind = event.event_type
        if kind == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
            attributes = event.workflow_task_failed_event_attributes
            cause = WorkflowTaskFailedCause.Name(attributes.cause)
            found["workflow_task_failure"] = f"{cause}: {attributes.failure.message[:300]}"
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED:
            found["reason"] = event.workflow_execution_terminated_event_attributes.reason
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED:
            failure = event.workflow_execution_failed_event_attributes.failure
            found["reason"] = failure.message[:300]
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED:
            failure = event.activity_task_failed_event_attributes.failure
            found["activity_failure"] = failure.message[:300]
    return found


def completed(figures: dict[str, Any]) -> bool:
    """Whether the chain ended with its last run completed."""
    return bool(figures["ending"]["last_event"] == "WORKFLOW_EXECUTION_COMPLETED")


async def outcome(handle: WorkflowHandle[Any, Any], timeout_s: float) -> str:
    """Waits for a turn's end: `completed`, `failed` (the workflow failed or was terminated,
    e.g. by the server at its history limit), or `stuck` (a workflow task failed three times
    in a row, as it does on a payload over the blob limit, or `timeout_s` passed); a stuck
    turn is terminated, since its workflow task would otherwise retry forever."""
    deadline = time.monotonic() + timeout_s
    result = asyncio.ensure_future(handle.result())
    while time.monotonic() < deadline:
        done, _ = await asyncio.wait({result}, timeout=_POLL_S)
        if done:
            return "completed" if result.exception() is None else "failed"
        description = await handle.describe()
        if description.raw_description.pending_workflow_task.attempt >= _STUCK_ATTEMPTS:
            break
    result.cancel()
    await handle.terminate("bench: the turn is stuck")
    return "stuck"
