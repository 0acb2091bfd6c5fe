"""MCP tools in a turn: discovered once at its start (the listing is recorded in history, so the
turn stays deterministic even if a server changes its tools mid-turn) and called through the
`mcp_call_tool` activity, which stores results like a worker tool's.

`agent.tools` names MCP tools by their qualified name `mcp__<server>__<tool>`, or all of a
server's tools as `mcp__<server>__*`.
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts.activity_io import ToolTraits
    from turnkeeper.contracts.mcp import (
        ACTIVITY_MCP_LIST_TOOLS,
        McpListToolsInput,
        McpListToolsResult,
        McpToolSpec,
        is_mcp_tool_name,
        split_qualified_name,
    )
    from turnkeeper.workflows.activity_calls import PROPAGATE, execute
    from turnkeeper.workflows.activity_options import (
        MCP_DISCOVERY_HEARTBEAT,
        MCP_DISCOVERY_RETRY,
        MCP_DISCOVERY_TIMEOUT,
    )
    from turnkeeper.workflows.turn_state import Turn

ALL_TOOLS = "*"


def wanted_servers(names: list[str]) -> list[str]:
    return sorted({split_qualified_name(name)[0] for name in names if is_mcp_tool_name(name)})


async def discover(turn: Turn) -> None:
    """Lists the MCP servers the agent names and keeps the tools it may use in `turn`. A server
    that is down only costs its tools: they are not offered, and the turn goes on."""
    servers = wanted_servers(turn.request.agent.tools)
    if not servers:
        return
    listing = await execute(
        ACTIVITY_MCP_LIST_TOOLS,
        McpListToolsInput(servers=servers, turn_id=workflow.info().workflow_id),
        # A server that is down is in `listing.errors`; the activity itself failing fails the
        # turn untyped, as it always has.
        PROPAGATE,
        result_type=McpListToolsResult,
        options=workflow.ActivityConfig(
            start_to_close_timeout=MCP_DISCOVERY_TIMEOUT,
            heartbeat_timeout=MCP_DISCOVERY_HEARTBEAT,
            retry_policy=MCP_DISCOVERY_RETRY,
            summary=f"discover MCP tools · {', '.join(servers)}",
        ),
    )
    for error in listing.errors:
        workflow.logger.warning("MCP tools not offered: %s", error)
    chosen = _chosen(turn.request.agent.tools, listing.tools)
    turn.tools.discovered_mcp_tools(
        {spec.name: spec for spec in chosen}, {spec.name: _traits(spec) for spec in chosen}
    )


def expand(names: list[str], discovered: dict[str, McpToolSpec]) -> list[str]:
    """`names` with each MCP entry replaced by the discovered tools it stands for."""
    expanded: list[str] = []
    for name in names:
        if not is_mcp_tool_name(name):
            expanded.append(name)
            continue
        server, tool = split_qualified_name(name)
        for spec in discovered.values():
            matches = spec.server == server and (tool == ALL_TOOLS or spec.name == name)
            if matches and spec.name not in expanded:
                expanded.append(spec.name)
    return expanded


def _chosen(names: list[str], listed: list[McpToolSpec]) -> list[McpToolSpec]:
    by_name = {spec.name: spec for spec in listed}
    chosen = [by_name[name] for name in expand(names, by_name) if name in by_name]
    missing = [
        n for n in names if is_mcp_tool_name(n) and not n.endswith("__*") and n not in by_name
    ]
    if missing:
        workflow.logger.warning("MCP tools not found, not offered: %s", ", ".join(missing))
    return chosen


def _traits(spec: McpToolSpec) -> ToolTraits:
    return ToolTraits(
        name=spec.name,
        input_schema=spec.input_schema,
        idempotent=spec.idempotent_hint,
        timeout_s=spec.activity_timeout_s,
    )
