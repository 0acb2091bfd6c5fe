"""The `mcp_list_tools` and `mcp_call_tool` activities: MCP servers as tools of a turn.

Discovery is per turn, not on a schedule: the workflow runs `mcp_list_tools` once, at the start
of a turn, and keeps the list in its state, so the turn's history records exactly which tools
were offered. A replay, or a server that changes its tools mid-turn, cannot change what this
turn offers, and a 100-iteration turn lists once rather than 100 times. The worker keeps each
listing for a short TTL so that many turns starting together share one `tools/list` per server.
A schedule would only add a second source of truth (a stored list that can be stale or missing)
without sparing the one listing a turn needs to be deterministic.

Both activities answer, never fail, when a server misbehaves: a server that is down becomes an
entry in `errors` (discovery) or an `is_error` result the model can react to (calls). A call's
`tool_result` block is put into the content store exactly as the `tool_call` activity does, so
the workflow treats an MCP result like a worker tool's. Only cancellation and the content store's
own errors leave the activities.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from typing import Any, cast

from mcp.types import RequestParamsMeta
from temporalio import activity
from turnkeeper.activities.heartbeating import heartbeating
from turnkeeper.activities.mcp import elicitation
from turnkeeper.activities.mcp.catalog import McpToolCatalog
from turnkeeper.activities.mcp.config import McpConfig, unknown_server_call
from turnkeeper.activities.mcp.connections import McpConnection, McpConnections
from turnkeeper.activities.mcp.failures import (
    McpUnavailable,
    describe_call_failure,
    is_connection_lost,
    root_cause,
)
from turnkeeper.activities.mcp.results import result_text
from turnkeeper.activities.mcp.tasks import McpTaskActivities
from turnkeeper.activities.tools.results import stored_result
from turnkeeper.activities.turn_identity import bound_to_turn
from turnkeeper.contracts.activity_io import ToolCallResult
from turnkeeper.contracts.mcp import (
    ACTIVITY_MCP_CALL_TOOL,
    ACTIVITY_MCP_LIST_TOOLS,
    McpCallInput,
    McpListToolsInput,
    McpListToolsResult,
    split_qualified_name,
)
from turnkeeper.contracts.mcp_elicitation import McpCallOutcome, McpInputRequired
from turnkeeper.contracts.result_limits import (
    DEFAULT_MAX_RESULT_BYTES,
    MAX_RESULT_BYTES,
    MIN_RESULT_BYTES,
    capped,
)

from turnkeeper.ground.logs import get_logger
from turnkeeper.payloads.content_store import ContentStore

log = get_logger(__name__)

# Lets a server that deduplicates requests make a retried call take effect once.
IDEMPOTENCY_KEY_META = "turnkeeper/idempotency_key"


class McpActivities:
    """The worker's MCP servers as activities (with `tasks`, those of calls answered with a task);
    register `activities()` with the worker.

    Args:
        config: the servers, from `load_mcp_config`.
        store: where each `tool_result` block is put.
        environ: where `${NAME}` references of the config are read when connecting.
        max_result_bytes: the cap on a result's UTF-8 size, as for worker tools.
        discovery_ttl_s: how long a server's tool listing is reused by later turns.
        probe_after_idle_s: a connection idle for longer is checked before a call uses it.
    """

    def __init__(
        self,
        config: McpConfig,
        store: ContentStore,
        *,
        environ: Mapping[str, str] | None = None,
        max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
        discovery_ttl_s: float = 30.0,
        probe_after_idle_s: float = 1.0,
    ) -> None:
        if not MIN_RESULT_BYTES <= max_result_bytes <= MAX_RESULT_BYTES:
            raise ValueError(
                f"max_result_bytes must be between {MIN_RESULT_BYTES} and {MAX_RESULT_BYTES}, "
                f"got {max_result_bytes}"
            )
        self._servers = config.servers
        self._store = store
        self._max_result_bytes = max_result_bytes
        self._connections = McpConnections(
            config.servers,
            os.environ if environ is None else environ,
            probe_after_idle_s=probe_after_idle_s,
        )
        self._catalog = McpToolCatalog(config.servers, self._connections, ttl_s=discovery_ttl_s)
        self.tasks = McpTaskActivities(
            self, config.servers, self._connections, plain_call=_call_tool, meta=_meta
        )

    def activities(self) -> list[Callable[..., Any]]:
        return [self.mcp_list_tools, self.mcp_call_tool, *self.tasks.activities()]

    async def aclose(self) -> None:
        """Close the servers' connections (stdio servers exit); call at worker shutdown."""
        await self._connections.aclose()

    @activity.defn(name=ACTIVITY_MCP_LIST_TOOLS)
    async def mcp_list_tools(self, request: McpListToolsInput) -> McpListToolsResult:
        """The tools of the requested servers; a server that fails is an entry in `errors`."""
        started = time.monotonic()
        result = await heartbeating(self._catalog.list_tools(request.servers))
        log.info(
            "mcp_list_tools",
            turn_id=request.turn_id,
            tools=len(result.tools),
            errors=len(result.errors),
            duration_ms=round((time.monotonic() - started) * 1000),
        )
        return result

    @activity.defn(name=ACTIVITY_MCP_CALL_TOOL)
    async def mcp_call_tool(self, call: McpCallInput) -> ToolCallResult | McpCallOutcome:
        """Run `call` on its server and put its `tool_result` block into the content store."""
        call = bound_to_turn(call)
        started = time.monotonic()
        outcome = await heartbeating(self._outcome(call))
        if isinstance(outcome, McpInputRequired):  # the workflow asks a person, then calls again
            return McpCallOutcome(
                block_ref="", is_error=False, content="", duration_ms=0, input_required=outcome
            )
        text, is_error = outcome
        return await self.stored(call, text, is_error, started)

    async def stored(
        self, call: McpCallInput, text: str, is_error: bool, started: float, **log_fields: Any
    ) -> ToolCallResult:
        """The `tool_result` block of `call`, capped and put into the content store."""
        return await stored_result(
            self._store,
            turn_id=call.turn_id,
            call_id=call.call_id,
            tool=call.name,
            text=capped(text, self._max_result_bytes),
            is_error=is_error,
            started=started,
            server=_server_of(call.name),
            **log_fields,
        )

    async def borrowed(self, call: McpCallInput) -> tuple[McpConnection, str] | str:
        """A connection to the server of `call` and the server's own name of its tool, or the
        sentence that says why the call cannot be made."""
        try:
            server, sanitized = split_qualified_name(call.name)
        except ValueError as err:
            return str(err)
        if server not in self._servers:
            return unknown_server_call(server)
        try:
            connection = await self._connections.borrow(server)
        except McpUnavailable as err:
            return str(err)
        # After the borrow: a server that is down is then tried once per call, not twice.
        return connection, await self._catalog.tool_name(server, call.name, sanitized)

    async def _outcome(self, call: McpCallInput) -> tuple[str, bool] | McpInputRequired:
        """The result text and whether it is an error, or the server's questions; never raises
        but for cancellation."""
        borrowed = await self.borrowed(call)
        if isinstance(borrowed, str):
            return borrowed, True
        return await _call_tool(*borrowed, call)


async def _call_tool(
    connection: McpConnection, tool: str, call: McpCallInput
) -> tuple[str, bool] | McpInputRequired:
    server, timeout_s = connection.server.name, connection.server.timeout_s
    try:
        # The call's own deadline (not the SDK's read timeout) stops while a person answers.
        result = await elicitation.call_tool(connection, tool, call, timeout_s, _meta(call))
    except Exception as err:
        connection.failed()
        _log_failure(call, server, err)
        return describe_call_failure(server, tool, timeout_s, err), True
    connection.succeeded()
    if isinstance(result, McpInputRequired):
        return result
    return result_text(tool, result)


def _meta(call: McpCallInput) -> RequestParamsMeta:
    # RequestParamsMeta is an open TypedDict: vendor keys like ours are allowed on the wire.
    return cast(RequestParamsMeta, {IDEMPOTENCY_KEY_META: call.idempotency_key})


def _server_of(name: str) -> str | None:
    try:
        return split_qualified_name(name)[0]
    except ValueError:
        return None


def _log_failure(call: McpCallInput, server: str, err: Exception) -> None:
    # The error's type only: its text may quote the arguments or the server's output.
    log.warning(
        "mcp_call_failed",
        server=server,
        call_id=call.call_id,
        turn_id=call.turn_id,
        error=type(root_cause(err)).__name__,
        connection_lost=is_connection_lost(err),
    )
