"""What every handler of the MCP endpoint shares: the served agents, the turn operations, who
the caller is, and the hooks through which approvals reach the caller (`WaitingHook`,
`InputRequestsHook`).

The caller is never a field of a request: over HTTP it is the identity of the bearer token that
the endpoint signed in (`endpoint`), put into the request's scope; over stdio it is the identity
`turnkeeper mcp --as NAME` runs as.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

from mcp.server.context import HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, CallToolRequestParams

from turnkeeper.contracts.signals import TurnStatus
from turnkeeper.http.access import visible_turn
from turnkeeper.http.errors import ApiError
from turnkeeper.http.mcp.agents import ServedAgent
from turnkeeper.http.origins import StartedTurn
from turnkeeper.http.tokens import Identity
from turnkeeper.http.turns import TurnService

# Where the endpoint puts the signed-in identity in an HTTP request's ASGI scope (`state`).
IDENTITY_STATE: Final = "turnkeeper_identity"


@dataclass(frozen=True)
class ServedCall:
    """One `tools/call` whose turn runs: what a hook needs to act on it for the caller."""

    ctx: ServerRequestContext[Any, Any]
    """The request (its session can ask the client: `ctx.session.elicit_form`)."""
    identity: Identity
    workflow_id: str
    agent: ServedAgent


WaitingHook = Callable[[ServedCall, TurnStatus], Awaitable[None]]
"""Called by a plain call each time its turn starts waiting for a person (its status says for
what): the place where the caller may be asked. Returns when it has done what it can; the call
goes on waiting for the turn's end either way."""

InputRequestsHook = Callable[
    [ServerRequestContext[Any, Any], Identity, StartedTurn, TurnStatus], Awaitable[dict[str, Any]]
]
"""For a 2026-07-28 task in `input_required`: the `inputRequests` to show the caller (keyed by
an id unique over the task's life); an empty map when nothing is the caller's to answer."""

ResumeHook = Callable[[Identity, CallToolRequestParams], Awaitable[str | None]]
"""For a 2026-07-28 `tools/call` retried with `requestState`: applies its `inputResponses` and
names the turn the call goes on waiting for (None: a first call, which starts one)."""

RoundTripHook = Callable[["ServedCall"], Awaitable[HandlerResult]]
"""A plain call's answer in place of `answer` alone: the turn's result, the caller asked about
its approvals while it waits (`elicitation/create`; in 2026-07-28, an `InputRequiredResult`)."""

TaskResultHook = Callable[
    [ServerRequestContext[Any, Any], Identity, str, Awaitable[Any]], Awaitable[Any]
]
"""`tasks/result` (2025-11-25): awaits its wait for the turn's end, asking the caller meanwhile."""


@dataclass
class Serving:
    """The served agents, the turn operations, and the hooks of the approval flow."""

    agents: dict[str, ServedAgent]
    turns: TurnService
    local_identity: Identity | None = None
    """Over stdio: the identity every request is made by. None over HTTP."""
    on_waiting: WaitingHook | None = None
    input_requests: InputRequestsHook | None = None
    resume: ResumeHook | None = None
    round_trip: RoundTripHook | None = None
    task_result: TaskResultHook | None = None

    def identity(self, ctx: ServerRequestContext[Any, Any]) -> Identity:
        """Who makes the request: the signed-in identity of its HTTP request, else the local
        identity (stdio)."""
        request = ctx.request
        scope = getattr(request, "scope", None)
        if isinstance(scope, dict):
            identity = (scope.get("state") or {}).get(IDENTITY_STATE)
            if isinstance(identity, Identity):
                return identity
        if self.local_identity is not None:
            return self.local_identity
        # Unreachable behind the endpoint, which signs every request in first.
        raise MCPError(INTERNAL_ERROR, "the request reached the server without an identity")

    async def visible(self, identity: Identity, workflow_id: str) -> StartedTurn:
        """The turn a task id names, when `identity` may see it (the API's own rule).

        Raises:
            MCPError: -32602 "task not found", alike for an id that is no turn and for a turn
                `identity` may not see (which ids exist does not leak).
        """
        try:
            return await visible_turn(self.turns, workflow_id, identity)
        except ApiError as error:
            raise mcp_error(error, workflow_id) from None


def task_not_found(workflow_id: str) -> MCPError:
    """The one answer for a task id that is no turn the caller may see."""
    return MCPError(INVALID_PARAMS, f"Failed to retrieve task: Task not found: {workflow_id!r}")


def mcp_error(error: ApiError, workflow_id: str) -> MCPError:
    """An API refusal about turn `workflow_id` as an MCP error: a missing turn is a task not
    found (-32602), another refusal of the caller's request -32602 with the API's reason, a
    fault of the server or of Temporal -32603."""
    if error.status == 404:
        return task_not_found(workflow_id)
    code = INTERNAL_ERROR if error.status >= 500 else INVALID_PARAMS
    return MCPError(code, error.message)
