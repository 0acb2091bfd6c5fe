"""`tools/list` and `tools/call` of the served agents.

A call starts a turn exactly as `POST /v1/turns` would: the request is the agent file's with the
call's `task`, billed as the caller may start it (`billed_request`), owned by the caller
(`started_by`). A plain call then waits for the turn's end and answers with its report; when
the request carries a progress token, the turn's events (the stream of `GET
/v1/turns/{id}/events`) go to the client as progress notifications meanwhile.
"""

from __future__ import annotations

from typing import Any

import anyio
from mcp.server.context import HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
)
from temporalio.service import RPCError

from turnkeeper.client.turns import TurnOutcome
from turnkeeper.contracts.events import TurnEvent
from turnkeeper.ground.logs import get_logger
from turnkeeper.http import audit
from turnkeeper.http.access import billed_request
from turnkeeper.http.errors import ApiError
from turnkeeper.http.mcp.agents import TASK_ARGUMENT, ServedAgent
from turnkeeper.http.mcp.results import call_result, refusal
from turnkeeper.http.mcp.serving import ServedCall, Serving, mcp_error
from turnkeeper.http.mcp.turn_view import outcome
from turnkeeper.http.tokens import Identity

log = get_logger(__name__)

# The audit line's action of a turn started through the MCP endpoint (`audit.line`).
AUDIT_START = "mcp:start"
# Events after which a turn may wait for a person: the waiting hook is offered its status then.
_MAY_WAIT = frozenset({"approval_requested", "budget_exhausted", "tool_call_started"})


async def list_tools(
    serving: Serving, ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams
) -> ListToolsResult:
    """Every served agent, one tool each (one page: an agent folder is small)."""
    return ListToolsResult(tools=[agent.tool() for agent in serving.agents.values()])


def called_agent(serving: Serving, params: CallToolRequestParams) -> ServedAgent:
    """The agent a call names.

    Raises:
        MCPError: -32602 for a name no agent has (the spec's answer to an unknown tool).
    """
    agent = serving.agents.get(params.name)
    if agent is None:
        known = ", ".join(sorted(serving.agents))
        raise MCPError(INVALID_PARAMS, f"Unknown tool: {params.name!r} (tools: {known})")
    return agent


def argument_problem(arguments: dict[str, Any] | None) -> str | None:
    """What is wrong with a call's arguments, or None when they are one string `task`."""
    given = arguments or {}
    extra = sorted(set(given) - {TASK_ARGUMENT})
    if extra:
        names = ", ".join(repr(name) for name in extra)
        return f"unexpected argument(s) {names}: the only argument is {TASK_ARGUMENT!r}"
    task = given.get(TASK_ARGUMENT)
    if task is None:
        return f"missing the required argument {TASK_ARGUMENT!r} (a string)"
    if not isinstance(task, str):
        return f"{TASK_ARGUMENT!r} must be a string, got {type(task).__name__}"
    if not task.strip():
        return f"{TASK_ARGUMENT!r} is empty: say what the agent should do"
    return None


def task_argument(params: CallToolRequestParams) -> str:
    """The task of a call whose arguments `argument_problem` found nothing wrong with."""
    assert params.arguments is not None
    task: str = params.arguments[TASK_ARGUMENT]
    return task


async def start(serving: Serving, identity: Identity, agent: ServedAgent, task: str) -> str:
    """Starts the agent's turn on `task` as `identity` would through `POST /v1/turns`.

    Raises:
        MCPError: -32602 with the API's reason when `identity` may not start it (a member and
            a priced agent, say); -32603 when Temporal refuses.
    """
    workflow_id, request = agent.turn(task)
    try:
        await serving.turns.start(billed_request(request, identity), workflow_id, identity.name)
    except ApiError as error:
        audit.line(identity, AUDIT_START, workflow_id, error.status)
        raise mcp_error(error, workflow_id) from None
    audit.line(identity, AUDIT_START, workflow_id, 201)
    return workflow_id


async def call_tool(
    serving: Serving, ctx: ServerRequestContext[Any, Any], params: CallToolRequestParams
) -> HandlerResult:
    """A plain call: starts the turn (or, retried with a `requestState`, goes on with its turn)
    and answers once it has ended, or, through `Serving.round_trip`, asks the caller first."""
    agent = called_agent(serving, params)
    problem = argument_problem(params.arguments)
    if problem:
        # An input error is the caller's model's to correct: a tool result, not a protocol error.
        return refusal(problem)
    identity = serving.identity(ctx)
    workflow_id = await serving.resume(identity, params) if serving.resume else None
    if workflow_id is None:
        workflow_id = await start(serving, identity, agent, task_argument(params))
    call = ServedCall(ctx, identity, workflow_id, agent)
    if serving.round_trip is not None:
        return await serving.round_trip(call)
    return await answer(serving, call)


async def answer(serving: Serving, call: ServedCall) -> CallToolResult:
    """The tool result of `call`'s turn, once it has ended; its events go to the client as
    progress meanwhile (when asked for), and the waiting hook hears when it waits."""
    wants_progress = bool(call.ctx.meta and "progress_token" in call.ctx.meta)
    async with anyio.create_task_group() as following:
        if wants_progress or serving.on_waiting is not None:
            following.start_soon(_follow, serving, call, wants_progress)
        ended = await _ended(serving, call.workflow_id)
        following.cancel_scope.cancel()
    # Raised here, outside the task group, which would wrap it in an exception group.
    if isinstance(ended, ApiError):
        raise mcp_error(ended, call.workflow_id)
    return call_result(ended, call.agent.output_schema)


async def _ended(serving: Serving, workflow_id: str) -> TurnOutcome | ApiError:
    try:
        return await outcome(serving.turns, workflow_id)
    except ApiError as error:
        return error


async def _follow(serving: Serving, call: ServedCall, wants_progress: bool) -> None:
    try:
        await _relay(serving, call, wants_progress)
    except (ApiError, RPCError) as error:
        # Progress is a courtesy: the answer still comes when the turn ends.
        log.warning("mcp_progress_stopped", workflow_id=call.workflow_id, error=str(error))


async def _relay(serving: Serving, call: ServedCall, wants_progress: bool) -> None:
    async for offset, event in serving.turns.events(call.workflow_id, None):
        if wants_progress:
            await call.ctx.session.report_progress(offset + 1, None, progress_message(event))
        if serving.on_waiting is not None and event.kind in _MAY_WAIT:
            status = await serving.turns.status(call.workflow_id)
            if status.pending or status.budget_request is not None:
                await serving.on_waiting(call, status)


def progress_message(event: TurnEvent) -> str:
    """One line of a progress notification: the event's kind and what it is about."""
    about = event.tool or event.model or event.outcome or event.error_type or ""
    line = f"{event.kind} (iteration {event.iteration})"
    return f"{line}: {about}" if about else line
