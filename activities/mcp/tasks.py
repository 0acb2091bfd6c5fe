"""The `mcp_start_task`, `mcp_poll_task` and `mcp_cancel_task` activities: an MCP tool call
that the server answers with a task, followed by the turn without holding anything open.

`mcp_start_task` makes the call in the form that lets the server answer with a task and returns
at once: with the task's handle, or with the stored result when the server answered plainly (a
2026-07-28 server decides per call) or could not be reached. The workflow then runs
`mcp_poll_task` (one `tasks/get`, and in 2025-11-25 a `tasks/result` once the task completed)
between timers, and `mcp_cancel_task` when the turn stops. No activity lasts longer than one
request, so a task of an hour holds no connection and no activity slot for that hour, and a
worker that dies costs one poll, which Temporal runs again elsewhere.

Like `mcp_call_tool`, the activities answer rather than fail when the server misbehaves: a task
answer that cannot be read, a task the server no longer knows, a failed or cancelled task all
become `is_error` results the model reads. A connection that is lost during a poll fails the poll
(Temporal retries it, and the next attempt reconnects): polling twice is harmless.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from mcp import MCPError
from temporalio import activity
from turnkeeper.activities.heartbeating import heartbeating
from turnkeeper.activities.mcp import task_wire as wire
from turnkeeper.activities.mcp.config import McpServerConfig, unknown_server_call
from turnkeeper.activities.mcp.connections import McpConnection, McpConnections
from turnkeeper.activities.mcp.failures import (
    McpUnavailable,
    describe_call_failure,
    is_connection_lost,
    root_cause,
)
from turnkeeper.activities.mcp.results import result_text
from turnkeeper.activities.mcp.task_questions import McpTaskQuestions
from turnkeeper.activities.turn_identity import bound_to_turn
from turnkeeper.contracts.mcp import (
    ACTIVITY_MCP_CANCEL_TASK,
    ACTIVITY_MCP_POLL_TASK,
    ACTIVITY_MCP_START_TASK,
    McpCallInput,
    McpTaskCancelResult,
    McpTaskHandle,
    McpTaskInput,
    McpTaskPollResult,
    McpTaskStartResult,
    TaskProtocol,
)

from turnkeeper.ground.logs import get_logger

if TYPE_CHECKING:
    from turnkeeper.activities.mcp.mcp_activity import McpActivities

log = get_logger(__name__)

PlainCall = Callable[[McpConnection, str, McpCallInput], Awaitable[tuple[str, bool]]]


class McpTaskActivities:
    """The task activities of one worker's MCP servers, sharing `McpActivities`' connections,
    tool names and content store.

    Args:
        calls: the worker's `McpActivities`.
        servers: the servers of the worker's configuration, by name.
        connections: their connections.
        plain_call: how `calls` makes a plain `tools/call`, for a server without tasks.
        meta: the `_meta` a call of the turn carries (its idempotency key).
    """

    def __init__(
        self,
        calls: McpActivities,
        servers: Mapping[str, McpServerConfig],
        connections: McpConnections,
        *,
        plain_call: PlainCall,
        meta: Callable[[McpCallInput], Mapping[str, Any]],
    ) -> None:
        self._calls = calls
        self._servers = servers
        self._connections = connections
        self._plain_call = plain_call
        self._meta = meta

    def activities(self) -> list[Callable[..., Any]]:
        # A task's questions are answered by activities of their own (task_questions.py).
        questions = McpTaskQuestions(self._calls, self._servers, self._connections)
        return [
            self.mcp_start_task,
            self.mcp_poll_task,
            self.mcp_cancel_task,
            *questions.activities(),
        ]

    @activity.defn(name=ACTIVITY_MCP_START_TASK)
    async def mcp_start_task(self, call: McpCallInput) -> McpTaskStartResult:
        """Make `call` so that the server may answer with a task; never waits for the task."""
        call = bound_to_turn(call)
        started = time.monotonic()
        outcome = await heartbeating(self._start(call))
        if isinstance(outcome, McpTaskHandle):
            log.info(
                "mcp_task_started",
                server=outcome.server,
                tool=call.name,
                task_id=outcome.task_id,
                call_id=call.call_id,
                turn_id=call.turn_id,
                protocol=outcome.protocol,
            )
            return McpTaskStartResult(task=outcome)
        text, is_error = outcome
        return McpTaskStartResult(result=await self._calls.stored(call, text, is_error, started))

    async def _start(self, call: McpCallInput) -> McpTaskHandle | tuple[str, bool]:
        borrowed = await self._calls.borrowed(call)
        if isinstance(borrowed, str):
            return borrowed, True
        connection, tool = borrowed
        protocol = wire.task_protocol(connection.client)
        if protocol is None:  # the server came back without tasks: a plain call still answers
            return await self._plain_call(connection, tool, call)
        server, timeout_s = connection.server.name, connection.server.timeout_s
        params = wire.call_params(protocol, tool, call.input, dict(self._meta(call)))
        try:
            answer = await wire.request(connection.client, "tools/call", params, timeout_s)
            task = wire.created_task(protocol, answer)
            if task is None:
                connection.succeeded()
                return result_text(tool, wire.call_result(answer))
        except wire.BadTaskAnswer as err:
            return f"MCP server {server!r} answered the call of {tool!r} wrongly: {err}", True
        except Exception as err:
            connection.failed()
            error = type(root_cause(err)).__name__
            log.warning("mcp_task_start_failed", server=server, tool=tool, error=error)
            return describe_call_failure(server, tool, timeout_s, err), True
        connection.succeeded()
        return _handle(server, call.name, protocol, task)

    @activity.defn(name=ACTIVITY_MCP_POLL_TASK)
    async def mcp_poll_task(self, poll: McpTaskInput) -> McpTaskPollResult:
        """One `tasks/get`; once the task ended, its result stored as the call's `tool_result`.

        Raises:
            McpUnavailable: the server cannot be reached (Temporal retries the poll).
        """
        started = time.monotonic()
        call = McpCallInput(turn_id=poll.turn_id, call_id=poll.call_id, name=poll.task.tool)
        call = bound_to_turn(call)
        polled = await heartbeating(self._poll(poll.task))
        if isinstance(polled, McpTaskPollResult):
            return polled
        text, is_error, task = polled
        result = await self._calls.stored(call, text, is_error, started, task_id=task.task_id)
        log.info(
            "mcp_task_settled",
            server=task.server,
            task_id=task.task_id,
            status=task.status,
            call_id=poll.call_id,
            turn_id=call.turn_id,
        )
        return McpTaskPollResult(task=task, result=result)

    async def _poll(
        self, task: McpTaskHandle
    ) -> McpTaskPollResult | tuple[str, bool, McpTaskHandle]:
        if task.server not in self._servers:  # this worker's configuration lacks it
            return unknown_server_call(task.server), True, task
        connection = await self._connections.borrow(task.server)
        timeout_s = connection.server.connect_timeout_s
        try:
            answer = await wire.request(
                connection.client, "tasks/get", {"taskId": task.task_id}, timeout_s
            )
            checked = wire.checked_task(task.protocol, answer)
            seen = _handle(task.server, task.tool, task.protocol, checked)
            if seen.task_id != task.task_id:
                raise wire.BadTaskAnswer(f"it answered for task {seen.task_id!r}")
            settled = await self._settled(connection, seen, answer)
        except wire.BadTaskAnswer as err:
            return _bad(task, str(err)), True, task
        except MCPError as err:
            if is_connection_lost(err) or isinstance(root_cause(err), TimeoutError):
                connection.failed()
                raise McpUnavailable(f"MCP server {task.server!r} did not answer a poll") from err
            text = f"MCP server {task.server!r} no longer follows task {task.task_id!r}: {err}"
            return text, True, task
        except Exception as err:
            connection.failed()
            raise McpUnavailable(f"MCP server {task.server!r} did not answer a poll") from err
        connection.succeeded()
        if settled is not None:
            return (*settled, seen)
        requests = answer.get("inputRequests")
        waiting = requests if isinstance(requests, dict) else None
        return McpTaskPollResult(task=seen, input_requests=waiting)

    async def _settled(
        self, connection: McpConnection, task: McpTaskHandle, answer: dict[str, Any]
    ) -> tuple[str, bool] | None:
        """The call's result once `task` ended; None while it runs."""
        what = f"MCP task {task.task_id!r} of tool {task.tool!r}"
        if task.status == "completed":
            if task.protocol == wire.MODERN:
                return result_text(task.tool, wire.call_result(answer.get("result")))
            fetched = await wire.request(
                connection.client,
                "tasks/result",
                {"taskId": task.task_id},
                connection.server.timeout_s,
            )
            return result_text(task.tool, wire.call_result(fetched))
        if task.status == "failed":
            return f"{what} failed: {wire.failure_text(answer)}", True
        if task.status == "cancelled":
            return f"{what} was cancelled: {wire.failure_text(answer)}", True
        return None

    @activity.defn(name=ACTIVITY_MCP_CANCEL_TASK)
    async def mcp_cancel_task(self, cancel: McpTaskInput) -> McpTaskCancelResult:
        """`tasks/cancel` for a task the turn no longer waits for; never raises."""
        task = cancel.task
        if task.server not in self._servers:
            return McpTaskCancelResult(cancelled=False, detail=unknown_server_call(task.server))
        try:
            connection = await self._connections.borrow(task.server)
            timeout_s = connection.server.connect_timeout_s
            await heartbeating(
                wire.request(connection.client, "tasks/cancel", {"taskId": task.task_id}, timeout_s)
            )
        except (McpUnavailable, MCPError, TimeoutError) as err:
            detail = f"{type(root_cause(err)).__name__}: {root_cause(err)}"
            log.info("mcp_task_cancel_refused", server=task.server, task_id=task.task_id)
            return McpTaskCancelResult(cancelled=False, detail=detail)
        log.info(
            "mcp_task_cancelled",
            server=task.server,
            task_id=task.task_id,
            call_id=cancel.call_id,
            turn_id=cancel.turn_id,
        )
        return McpTaskCancelResult(cancelled=True)


def _handle(server: str, tool: str, protocol: TaskProtocol, task: dict[str, Any]) -> McpTaskHandle:
    return McpTaskHandle(
        server=server,
        tool=tool,
        task_id=task["taskId"],
        protocol=protocol,
        status=task["status"],
        status_message=task.get("statusMessage"),
        poll_interval_ms=task.get(wire.poll_interval_key(protocol)),
    )


def _bad(task: McpTaskHandle, problem: str) -> str:
    return (
        f"MCP server {task.server!r} answered a poll of task {task.task_id!r} wrongly: {problem}; "
        "the task is no longer followed"
    )
