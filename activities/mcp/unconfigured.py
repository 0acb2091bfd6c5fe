"""The MCP activities of a worker with no MCP server configured.

The `mcp` SDK costs a worker about 25 MiB of memory on import, so a worker without MCP servers
registers these instead: the same activity names and answers (every server is unknown, so a turn
that names one goes on without its tools, and a task it follows ends as an error result), with
nothing of the SDK loaded.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from temporalio import activity
from turnkeeper.activities.mcp.config import unknown_server, unknown_server_call
from turnkeeper.activities.tools.results import stored_result
from turnkeeper.activities.turn_identity import bound_to_turn
from turnkeeper.contracts.activity_io import ToolCallResult
from turnkeeper.contracts.mcp import (
    ACTIVITY_MCP_CALL_TOOL,
    ACTIVITY_MCP_CANCEL_TASK,
    ACTIVITY_MCP_LIST_TOOLS,
    ACTIVITY_MCP_POLL_TASK,
    ACTIVITY_MCP_START_TASK,
    McpCallInput,
    McpListToolsInput,
    McpListToolsResult,
    McpTaskCancelResult,
    McpTaskInput,
    McpTaskPollResult,
    McpTaskStartResult,
    split_qualified_name,
)

from turnkeeper.payloads.content_store import ContentStore


class NoMcpServers:
    def __init__(self, store: ContentStore) -> None:
        self._store = store

    def activities(self) -> list[Callable[..., Any]]:
        return [
            self.mcp_list_tools,
            self.mcp_call_tool,
            self.mcp_start_task,
            self.mcp_poll_task,
            self.mcp_cancel_task,
        ]

    async def aclose(self) -> None:
        pass  # nothing was connected

    @activity.defn(name=ACTIVITY_MCP_LIST_TOOLS)
    async def mcp_list_tools(self, request: McpListToolsInput) -> McpListToolsResult:
        return McpListToolsResult(
            errors=[unknown_server(name, {}) for name in request.servers or []]
        )

    @activity.defn(name=ACTIVITY_MCP_CALL_TOOL)
    async def mcp_call_tool(self, call: McpCallInput) -> ToolCallResult:
        call = bound_to_turn(call)
        started = time.monotonic()
        try:
            server = split_qualified_name(call.name)[0]
        except ValueError as err:
            server, text = "", str(err)
        else:
            text = unknown_server_call(server)
        return await stored_result(
            self._store,
            turn_id=call.turn_id,
            call_id=call.call_id,
            tool=call.name,
            text=text,
            is_error=True,
            started=started,
            server=server,
        )

    @activity.defn(name=ACTIVITY_MCP_START_TASK)
    async def mcp_start_task(self, call: McpCallInput) -> McpTaskStartResult:
        return McpTaskStartResult(result=await self.mcp_call_tool(call))

    @activity.defn(name=ACTIVITY_MCP_POLL_TASK)
    async def mcp_poll_task(self, poll: McpTaskInput) -> McpTaskPollResult:
        call = McpCallInput(turn_id=poll.turn_id, call_id=poll.call_id, name=poll.task.tool)
        return McpTaskPollResult(task=poll.task, result=await self.mcp_call_tool(call))

    @activity.defn(name=ACTIVITY_MCP_CANCEL_TASK)
    async def mcp_cancel_task(self, cancel: McpTaskInput) -> McpTaskCancelResult:
        return McpTaskCancelResult(cancelled=False, detail=unknown_server_call(cancel.task.server))
