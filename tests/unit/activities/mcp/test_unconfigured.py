"""A worker without MCP servers: a call to an MCP tool is an error result naming the unknown
server, not a failure. (The worker that does not load the MCP SDK at all:
tests/workflows/test_mcp_turn.py.)"""

from __future__ import annotations

from pathlib import Path

from temporalio.testing import ActivityEnvironment
from turnkeeper.activities.mcp.unconfigured import NoMcpServers
from turnkeeper.contracts.mcp import McpCallInput, McpTaskHandle, McpTaskInput

from turnkeeper.payloads.content_store import LocalFolderStore


async def test_without_mcp_servers_a_call_to_one_is_an_error_result(tmp_path: Path) -> None:
    activities = NoMcpServers(LocalFolderStore(tmp_path / "store"))
    call = McpCallInput(turn_id="turn-1", call_id="toolu_1", name="mcp__web__echo")

    result = await ActivityEnvironment().run(activities.mcp_call_tool, call)

    assert result.is_error
    assert "unknown MCP server 'web'" in result.content


async def test_without_mcp_servers_a_task_of_one_ends_as_an_error_result(tmp_path: Path) -> None:
    activities = NoMcpServers(LocalFolderStore(tmp_path / "store"))
    call = McpCallInput(turn_id="turn-1", call_id="toolu_1", name="mcp__web__research")
    task = McpTaskHandle(server="web", tool=call.name, task_id="t-1", protocol="2026-07-28")
    followed = McpTaskInput(turn_id="turn-1", call_id="toolu_1", task=task)

    started = await ActivityEnvironment().run(activities.mcp_start_task, call)
    polled = await ActivityEnvironment().run(activities.mcp_poll_task, followed)
    cancelled = await ActivityEnvironment().run(activities.mcp_cancel_task, followed)

    assert started.task is None and started.result is not None and started.result.is_error
    assert polled.result is not None and polled.result.is_error
    assert "unknown MCP server 'web'" in polled.result.content
    assert not cancelled.cancelled and "unknown MCP server 'web'" in cancelled.detail
