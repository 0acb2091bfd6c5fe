"""Facts a test reads from a workflow's history instead of a stopwatch: what was scheduled with
which timeouts and retry policy, which attempt ran on which worker, what timed out and how. A slow
machine changes none of them."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import (
    ActivityTaskScheduledEventAttributes,
    ActivityTaskStartedEventAttributes,
    HistoryEvent,
)
from temporalio.client import Client, WorkflowHandle
from temporalio.service import RPCError


async def events(handle: WorkflowHandle[Any, Any]) -> list[HistoryEvent]:
    return list((await handle.fetch_history()).events)


async def scheduled(
    handle: WorkflowHandle[Any, Any], activity_type: str
) -> list[ActivityTaskScheduledEventAttributes]:
    """How each activity of `activity_type` was scheduled (timeouts, retry policy), in order."""
    return [
        event.activity_task_scheduled_event_attributes
        for event in await events(handle)
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        and event.activity_task_scheduled_event_attributes.activity_type.name == activity_type
    ]


async def started(
    handle: WorkflowHandle[Any, Any],
) -> list[ActivityTaskStartedEventAttributes]:
    """The last attempt of each activity: its number, worker identity and the failure before it."""
    return [
        event.activity_task_started_event_attributes
        for event in await events(handle)
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
    ]


async def timeout_types(handle: WorkflowHandle[Any, Any]) -> list[int]:
    """Why each activity that timed out did (heartbeat, start-to-close, …), in order."""
    return [
        event.activity_task_timed_out_event_attributes.failure.timeout_failure_info.timeout_type
        for event in await events(handle)
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT
    ]


async def completed_attempts(
    handle: WorkflowHandle[Any, Any], activity_type: str
) -> list[tuple[int, str, str]]:
    """Each completed activity of `activity_type`: (attempt, who started it, who completed it)."""
    history = await events(handle)
    by_id = {event.event_id: event for event in history}
    attempts = []
    for event in history:
        if event.event_type != EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            continue
        done = event.activity_task_completed_event_attributes
        kind = by_id[done.scheduled_event_id].activity_task_scheduled_event_attributes
        began = by_id[done.started_event_id].activity_task_started_event_attributes
        if kind.activity_type.name == activity_type:
            attempts.append((began.attempt, began.identity, done.identity))
    return attempts


def decoded_payloads(node: object) -> Iterator[str]:
    """The data of every payload in a history's JSON, which holds it base64-encoded."""
    if isinstance(node, dict):
        if isinstance(node.get("data"), str) and "metadata" in node:
            yield base64.b64decode(node["data"]).decode(errors="replace")
        for value in node.values():
            yield from decoded_payloads(value)
    elif isinstance(node, list):
        for item in node:
            yield from decoded_payloads(item)


async def where_they_stand(client: Client, *workflow_ids: str, last: int = 12) -> str:
    """What a stalled test says of its workflows: each one's status, pending activities and
    children, and its history's last events by type (the current run of each id)."""
    lines = []
    for workflow_id in workflow_ids:
        handle = client.get_workflow_handle(workflow_id)
        try:
            described = await handle.describe()
            history = await events(handle)
        except RPCError as err:
            lines.append(f"{workflow_id}: unreadable ({err})")
            continue
        raw = described.raw_description
        status = described.status.name if described.status else "unknown status"
        tail = ", ".join(
            f"{event.event_id}:{EventType.Name(event.event_type).removeprefix('EVENT_TYPE_')}"
            for event in history[-last:]
        )
        lines.append(
            f"{workflow_id} (run {described.run_id}): {status}, "
            f"{len(raw.pending_activities)} activities and {len(raw.pending_children)} children "
            f"pending, last events [{tail}]"
        )
    return "\n".join(lines)
