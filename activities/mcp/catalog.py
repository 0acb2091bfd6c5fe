"""The tools of the worker's MCP servers, listed through their connections and kept briefly.

A listing is kept for `ttl_s` so that the turns starting on this worker within that time share
one `tools/list` per server; failures are not kept, so a server that comes back is seen by the
next turn. The map from qualified names back to the servers' own tool names is kept for good: a
call may arrive on a worker that listed long ago, or never (it then lists once to learn it).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from mcp import Client
from mcp.types import Tool
from turnkeeper.activities.mcp.config import McpServerConfig, unknown_server
from turnkeeper.activities.mcp.connections import McpConnections
from turnkeeper.activities.mcp.failures import (
    McpUnavailable,
    describe_unreachable,
    is_connection_lost,
    root_cause,
)
from turnkeeper.activities.mcp.task_wire import task_support
from turnkeeper.contracts.mcp import McpListToolsResult, McpToolSpec, TaskSupport, qualified_name

# A server whose pagination never ends must not hang a turn's start.
_MAX_PAGES = 100
# How long a call may outlast its own MCP request timeout before it is abandoned: for a
# transport that stops answering altogether.
CALL_GUARD_S = 5.0


@dataclass
class _Listing:
    tools: list[McpToolSpec]
    problems: list[str] = field(default_factory=list)  # tools that cannot be offered


class McpToolCatalog:
    """Lists the servers' tools as `McpToolSpec`s and maps qualified names back."""

    def __init__(
        self,
        servers: Mapping[str, McpServerConfig],
        connections: McpConnections,
        *,
        ttl_s: float = 30.0,
    ) -> None:
        self._servers = servers
        self._connections = connections
        self._ttl_s = ttl_s
        self._listings: dict[str, tuple[float, _Listing]] = {}
        self._tool_names: dict[str, str] = {}
        # The client each server was last listed through: what it negotiated says whether the
        # server runs calls as tasks.
        self._listed_through: dict[str, Client] = {}

    async def list_tools(self, servers: list[str] | None) -> McpListToolsResult:
        """The tools of `servers` (None: all), and one error sentence per server that failed."""
        wanted = sorted(self._servers) if servers is None else list(dict.fromkeys(servers))
        unknown = [name for name in wanted if name not in self._servers]
        known = [name for name in wanted if name in self._servers]
        outcomes = await asyncio.gather(*(self._listing(name) for name in known))
        result = McpListToolsResult(errors=[self._unknown(name) for name in unknown])
        for outcome in outcomes:
            if isinstance(outcome, str):
                result.errors.append(outcome)
            else:
                result.tools.extend(outcome.tools)
                result.errors.extend(outcome.problems)
        return result

    async def tool_name(self, server: str, qualified: str, sanitized: str) -> str:
        """The server's own name for the tool offered as `qualified`.

        Lists the server once if this worker has not seen the name; falls back to `sanitized`
        (the server then answers "unknown tool", which the model can act on).
        """
        if qualified not in self._tool_names:
            await self._listing(server)
        return self._tool_names.get(qualified, sanitized)

    async def _listing(self, server: str) -> _Listing | str:
        cached = self._listings.get(server)
        if cached is not None and cached[0] > time.monotonic():
            return cached[1]
        try:
            tools = await self._fetch(server)
        except McpUnavailable as err:
            return str(err)
        except Exception as err:
            if is_connection_lost(err):
                return describe_unreachable(server, err)
            cause = root_cause(err)
            return (
                f"MCP server {server!r} could not list its tools: {type(cause).__name__}: {cause}"
            )
        listing = self._offerable(self._servers[server], tools)
        self._listings[server] = (time.monotonic() + self._ttl_s, listing)
        return listing

    async def _fetch(self, server: str) -> list[Tool]:
        connection = await self._connections.borrow(server)
        self._listed_through[server] = connection.client
        tools: list[Tool] = []
        cursor: str | None = None
        try:
            async with asyncio.timeout(connection.server.connect_timeout_s):
                for _ in range(_MAX_PAGES):
                    page = await connection.client.list_tools(cursor=cursor)
                    tools.extend(page.tools)
                    cursor = page.next_cursor
                    if cursor is None:
                        break
        except BaseException:
            connection.failed()
            raise
        connection.succeeded()
        return tools

    def _offerable(self, server: McpServerConfig, tools: list[Tool]) -> _Listing:
        listing = _Listing(tools=[])
        taken: dict[str, str] = {}
        client = self._listed_through.get(server.name)
        for tool in tools:
            try:
                support = task_support(client, tool) if client is not None else "forbidden"
                spec = tool_spec(server, tool, support)
            except ValueError as err:
                listing.problems.append(str(err))
                continue
            if spec.name in taken:
                listing.problems.append(
                    f"tools {taken[spec.name]!r} and {tool.name!r} of MCP server {server.name!r} "
                    f"would both be offered as {spec.name!r}; only {taken[spec.name]!r} is"
                )
                continue
            taken[spec.name] = tool.name
            self._tool_names[spec.name] = tool.name
            listing.tools.append(spec)
        return listing

    def _unknown(self, server: str) -> str:
        return unknown_server(server, self._servers)


def call_activity_timeout_s(server: McpServerConfig) -> float:
    """The longest an `mcp_call_tool` activity can take before it answers: a probe, a reconnect
    and (on a worker that never listed the server) a listing, each bounded by the connect
    timeout, then the call and its guard, plus a margin for the content store."""
    return 3 * server.connect_timeout_s + server.timeout_s + CALL_GUARD_S + 5.0


def tool_spec(
    server: McpServerConfig, tool: Tool, support: TaskSupport = "forbidden"
) -> McpToolSpec:
    """`tool` as offered to the model; `support` says whether its calls may become tasks.

    Raises:
        ValueError: its qualified name cannot fit the model API's tool-name pattern.
    """
    hints = tool.annotations
    read_only = bool(hints and hints.read_only_hint)
    return McpToolSpec(
        name=qualified_name(server.name, tool.name),
        server=server.name,
        tool=tool.name,
        description=tool.description or tool.title or "",
        input_schema=tool.input_schema,
        timeout_s=server.timeout_s,
        activity_timeout_s=call_activity_timeout_s(server),
        read_only_hint=read_only,
        idempotent_hint=read_only or bool(hints and hints.idempotent_hint),
        task_support=support,
    )
