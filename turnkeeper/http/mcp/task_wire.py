"""A served turn as a task on the wire, in each era's words.

2025-11-25 (the core `tasks` utility): a `Task` with `ttl` and `pollInterval`, the result only
through `tasks/result`. 2026-07-28 (the `io.modelcontextprotocol/tasks` extension, SEP-2663):
`ttlMs` and `pollIntervalMs`, and `tasks/get` carries the result of a task that has ended; a
turn that failed is a tool result with `isError` there, in status `completed`, since that
extension keeps `failed` for JSON-RPC errors only (a plain call of the same turn answers that
same tool result).

Built as plain mappings here, not with `mcp_types.Task`: the wire needs `ttl: null` (unlimited)
present, which the SDK's dump drops with every other None.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

from mcp_types import CallToolResult

from turnkeeper.http.mcp.results import TaskStatus, call_result
from turnkeeper.http.mcp.turn_view import TurnView

TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"
RELATED_TASK_META: Final = "io.modelcontextprotocol/related-task"
# How often a client is asked to poll: a turn's steps take seconds (model calls), its waits for
# people minutes; a poll costs one describe and one status query.
POLL_INTERVAL_MS: Final = 1000
WAITING_POLL_INTERVAL_MS: Final = 5000


def legacy_task(
    workflow_id: str, status: TaskStatus, message: str, created: datetime, updated: datetime
) -> dict[str, Any]:
    """A 2025-11-25 `Task`. Its ttl is null: a turn is kept as long as the namespace keeps
    closed workflows, which is Temporal's to say, not the server's."""
    task = _task(workflow_id, status, message, created, updated)
    return {**task, "ttl": None, "pollInterval": _poll_interval(status)}


def legacy_view(turn: TurnView) -> dict[str, Any]:
    """`tasks/get` and `tasks/cancel` of 2025-11-25."""
    return legacy_task(turn.workflow_id, turn.status, turn.message, turn.created, turn.updated)


def modern_task(
    workflow_id: str, status: TaskStatus, message: str, created: datetime, updated: datetime
) -> dict[str, Any]:
    """A 2026-07-28 `Task` (what a `CreateTaskResult` holds besides `resultType`)."""
    task = _task(workflow_id, status, message, created, updated)
    return {**task, "ttlMs": None, "pollIntervalMs": _poll_interval(status)}


def modern_view(
    turn: TurnView, output_schema: dict[str, Any] | None, input_requests: dict[str, Any]
) -> dict[str, Any]:
    """`tasks/get` of 2026-07-28: the task with its `inputRequests` while it waits for a
    person, its `result` once it has ended (a cancelled turn's partial report too, so that
    the caller reads what the interrupt left)."""
    status = turn.status
    if status == "failed":
        status = "completed"  # the tool result says how it failed (module docstring)
    task = modern_task(turn.workflow_id, status, turn.message, turn.created, turn.updated)
    if turn.status == "input_required":
        task["inputRequests"] = input_requests
    if turn.outcome is not None:
        task["result"] = wire_result(call_result(turn.outcome, output_schema))
    return task


def related(result: CallToolResult, workflow_id: str) -> dict[str, Any]:
    """`tasks/result` of 2025-11-25: the tool result, marked as the task's."""
    wire = wire_result(result)
    wire["_meta"] = {**wire.get("_meta", {}), RELATED_TASK_META: {"taskId": workflow_id}}
    return wire


def wire_result(result: CallToolResult) -> dict[str, Any]:
    return result.model_dump(by_alias=True, mode="json", exclude_none=True)


def _task(
    workflow_id: str, status: TaskStatus, message: str, created: datetime, updated: datetime
) -> dict[str, Any]:
    """What a task says in both eras."""
    return {
        "taskId": workflow_id,
        "status": status,
        "statusMessage": message,
        "createdAt": created.isoformat(),
        "lastUpdatedAt": updated.isoformat(),
    }


def _poll_interval(status: TaskStatus) -> int:
    return WAITING_POLL_INTERVAL_MS if status == "input_required" else POLL_INTERVAL_MS
