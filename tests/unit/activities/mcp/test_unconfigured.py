"""A worker without MCP servers: a call to an MCP tool is an error result naming the unknown
server, not a failure. (The worker that does not load the MCP SDK at all:
tests/workflows/test_mcp_turn.py.)"""

from __future__ import annotations

from pathlib import Path

from temporalio.testing import ActivityEnvironment
from turnkeeper.activities.mcp.unconfigured import NoMcpServers
from turnkeeper.contracts.mcp import McpCallInput

from turnkeeper.payloads.content_store import LocalFolderStore


async def test_without_mcp_servers_a_call_to_one_is_an_error_result(tmp_path: Path) -> None:
    activities = NoMcpServers(LocalFolderStore(tmp_path / "store"))
    call = McpCallInput(turn_id="turn-1", call_id="toolu_1", name="mcp__web__echo")

    result = await ActivityEnvironment().run(activities.mcp_call_tool, call)

    assert result.is_error
    assert "unknown MCP server 'web'" in result.content
