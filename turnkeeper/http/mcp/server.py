"""The MCP server of the served agents: the SDK's lowlevel `Server` with `tools/list`,
`tools/call` and the task methods (`TurnTasks`), for both protocol eras. The same server runs
behind `/mcp` (`endpoint`) and over stdio (`stdio`)."""

from __future__ import annotations

from functools import partial
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Final

from mcp.server.extension import RequestHandler
from mcp.server.lowlevel import NotificationOptions, Server
from mcp_types import (
    CallToolRequestParams,
    PaginatedRequestParams,
    ServerCapabilities,
    ServerTasksCapability,
    ServerTasksRequestsCapability,
    TasksCallCapability,
    TasksCancelCapability,
    TasksListCapability,
    TasksToolsCapability,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from turnkeeper.http.mcp.agents import ServedAgent
from turnkeeper.http.mcp.asking import install, state_boundary
from turnkeeper.http.mcp.calls import list_tools
from turnkeeper.http.mcp.serving import Serving
from turnkeeper.http.mcp.tasks import TurnTasks, bind
from turnkeeper.http.tokens import Identity
from turnkeeper.http.turns import TurnService

SERVER_NAME: Final = "turnkeeper"
INSTRUCTIONS: Final = (
    "Each tool is a durable agent: give it a task; it answers with its report. A call may "
    "take minutes (and wait for a person's approval): call it as a task to poll it."
)
# What a 2025-11-25 server says of its tasks in `initialize`: listed, cancelled, and
# `tools/call` may be task-augmented.
LEGACY_TASKS: Final = ServerTasksCapability(
    list=TasksListCapability(),
    cancel=TasksCancelCapability(),
    requests=ServerTasksRequestsCapability(tools=TasksToolsCapability(call=TasksCallCapability())),
)


class AgentsServer(Server[Any]):
    """The lowlevel server, saying `tasks` in the handshake era's capabilities (the SDK
    derives capabilities from handlers, and has no 2025 tasks of its own)."""

    def get_capabilities(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
        *,
        protocol_version: str | None = None,
    ) -> ServerCapabilities:
        found = super().get_capabilities(
            notification_options,
            experimental_capabilities,
            extensions,
            protocol_version=protocol_version,
        )
        if protocol_version in MODERN_PROTOCOL_VERSIONS:
            return found
        return found.model_copy(update={"tasks": LEGACY_TASKS})


def served(
    agents: dict[str, ServedAgent], turns: TurnService, local_identity: Identity | None = None
) -> AgentsServer:
    """The server of `agents` over `turns` (`local_identity`: the caller of every request,
    over stdio): the one place where `/mcp` and `turnkeeper mcp` put it together."""
    serving = Serving(agents, turns, local_identity)
    server = agents_server(serving, install(serving))
    # Outermost: a retried call's `requestState` is opened (and checked) before anything reads it.
    server.middleware.insert(0, state_boundary(serving, SERVER_NAME))
    return server


def agents_server(serving: Serving, update: RequestHandler | None = None) -> AgentsServer:
    """The server of `serving`'s agents (`update`: the `tasks/update` handler, when approvals
    are answered through it)."""
    server = AgentsServer(SERVER_NAME, version=_version(), instructions=INSTRUCTIONS)
    tasks = TurnTasks(serving, update)
    server.add_request_handler("tools/list", PaginatedRequestParams, partial(list_tools, serving))
    server.add_request_handler("tools/call", CallToolRequestParams, tasks.call_tool)
    bind(server, tasks)
    server.middleware.append(tasks.calls_as_tasks)
    return server


def _version() -> str:
    try:
        return version("turnkeeper")
    except PackageNotFoundError:
        return ""
