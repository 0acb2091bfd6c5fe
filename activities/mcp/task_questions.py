"""The `mcp_answer_task` and `mcp_task_input` activities: a person's answer reaches a task that
asked for input (status `input_required`), in the way of each protocol revision.

2026-07-28 (`mcp_answer_task`): the workflow already has the answers (it read the questions in
`tasks/get`'s `inputRequests` and asked a person); one `tasks/update` sends them. Sending it again
after a lost worker is harmless: a server that already has an answer for a key refuses or ignores
the second, and the activity reports that instead of failing, so the turn goes on polling.

2025-11-25 (`mcp_task_input`): the server delivers its `elicitation/create` only on the session
of a `tasks/result` request, which blocks until the task ends. The activity makes that request
with the connection's elicitation router pointed at this call (`CallAsker`, as a plain call's
questions go), so the question reaches the turn through the `mcp_elicitation` update and the
answer goes back on the same session; then it returns the task's result, or nothing (keep
polling) when the server's own time (`timeout_s`, stopped while the person thinks) ran out.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from mcp import MCPError
from temporalio import activity
from turnkeeper.activities.heartbeating import heartbeating
from turnkeeper.activities.mcp import task_wire as wire
from turnkeeper.activities.mcp.config import McpServerConfig, unknown_server_call
from turnkeeper.activities.mcp.connections import McpConnections
from turnkeeper.activities.mcp.elicitation import CallAsker
from turnkeeper.activities.mcp.failures import McpUnavailable, is_connection_lost, root_cause
from turnkeeper.activities.mcp.results import result_text
from turnkeeper.activities.turn_identity import bound_to_turn
from turnkeeper.contracts.mcp import McpCallInput, McpTaskInput, McpTaskPollResult
from turnkeeper.contracts.mcp_task_questions import (
    ACTIVITY_MCP_ANSWER_TASK,
    ACTIVITY_MCP_TASK_INPUT,
    McpTaskAnswerInput,
    McpTaskAnswerResult,
)

from turnkeeper.ground.logs import get_logger

if TYPE_CHECKING:
    from turnkeeper.activities.mcp.mcp_activity import McpActivities

log = get_logger(__name__)


class McpTaskQuestions:
    """The activities that answer a task's questions, sharing `McpActivities`' connections and
    content store."""

    def __init__(
        self,
        calls: McpActivities,
        servers: Mapping[str, McpServerConfig],
        connections: McpConnections,
    ) -> None:
        self._calls = calls
        self._servers = servers
        self._connections = connections

    def activities(self) -> list[Callable[..., Any]]:
        return [self.mcp_answer_task, self.mcp_task_input]

    @activity.defn(name=ACTIVITY_MCP_ANSWER_TASK)
    async def mcp_answer_task(self, answer: McpTaskAnswerInput) -> McpTaskAnswerResult:
        """One `tasks/update` with the person's answers (2026-07-28).

        Raises:
            McpUnavailable: the server cannot be reached (Temporal retries the activity).
        """
        task = answer.task
        if task.server not in self._servers:
            return McpTaskAnswerResult(sent=False, detail=unknown_server_call(task.server))
        responses = {key: a.model_dump(exclude_none=True) for key, a in answer.answers.items()}
        connection = await self._connections.borrow(task.server)
        params = {"taskId": task.task_id, "inputResponses": responses}
        try:
            await heartbeating(
                wire.request(
                    connection.client, "tasks/update", params, connection.server.connect_timeout_s
                )
            )
        except MCPError as err:
            if is_connection_lost(err) or isinstance(root_cause(err), TimeoutError):
                connection.failed()
                raise McpUnavailable(f"MCP server {task.server!r} did not take the answer") from err
            # Most often a resend after a lost worker: the server has these answers already.
            log.info("mcp_task_answer_refused", server=task.server, task_id=task.task_id)
            return McpTaskAnswerResult(sent=False, detail=str(err))
        connection.succeeded()
        log.info(
            "mcp_task_answered",
            server=task.server,
            task_id=task.task_id,
            keys=sorted(responses),
            call_id=answer.call_id,
            turn_id=answer.turn_id,
        )
        return McpTaskAnswerResult(sent=True)

    @activity.defn(name=ACTIVITY_MCP_TASK_INPUT)
    async def mcp_task_input(self, poll: McpTaskInput) -> McpTaskPollResult:
        """`tasks/result` for a task in `input_required` (2025-11-25), answering the questions
        the server sends on it; the task's stored result once it ended, else no result.

        Raises:
            McpUnavailable: the server cannot be reached (Temporal retries the activity).
        """
        started = time.monotonic()
        call = McpCallInput(turn_id=poll.turn_id, call_id=poll.call_id, name=poll.task.tool)
        call = bound_to_turn(call)
        task = poll.task
        if task.server not in self._servers:
            text, is_error = unknown_server_call(task.server), True
        else:
            fetched = await heartbeating(self._fetch(call, poll))
            if fetched is None:
                return McpTaskPollResult(task=task)
            text, is_error = fetched
        result = await self._calls.stored(call, text, is_error, started, task_id=task.task_id)
        settled = task.model_copy(update={"status": "failed" if is_error else "completed"})
        return McpTaskPollResult(task=settled, result=result)

    async def _fetch(self, call: McpCallInput, poll: McpTaskInput) -> tuple[str, bool] | None:
        task = poll.task
        connection = await self._connections.borrow(task.server)
        # The request may last as long as the activity (a person answers during it); the
        # server's own share is bounded by `timeout_s`, which stops while the person thinks.
        whole = activity.info().start_to_close_timeout or timedelta(seconds=300)
        try:
            async with asyncio.timeout(connection.server.timeout_s) as deadline:
                with connection.elicitations.asking(CallAsker(call, deadline)):
                    fetched = await wire.request(
                        connection.client,
                        "tasks/result",
                        {"taskId": task.task_id},
                        whole.total_seconds(),
                    )
            connection.succeeded()
            return result_text(task.tool, wire.call_result(fetched))
        except TimeoutError:  # the task runs on after its question: polls follow it
            return None
        except wire.BadTaskAnswer as err:
            return f"MCP server {task.server!r} answered tasks/result wrongly: {err}", True
        except MCPError as err:
            if is_connection_lost(err) or isinstance(root_cause(err), TimeoutError):
                connection.failed()
                raise McpUnavailable(f"MCP server {task.server!r} did not answer") from err
            return (
                f"MCP server {task.server!r} no longer follows task {task.task_id!r}: {err}",
                True,
            )
