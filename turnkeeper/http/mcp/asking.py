"""How a served turn's approvals reach the MCP caller (docs/mcp-serve.md, Approvals over MCP),
in each era, through the hooks of `Serving` (`install`):

- handshake era (2024-11-05 … 2025-11-25): while a plain call waits, the server sends
  `elicitation/create` on the call's own stream (`round_trip`); while `tasks/result` waits, the
  same, tagged with the task in `_meta["io.modelcontextprotocol/related-task"]` (`task_result`);
- 2026-07-28, a plain call: it answers an `InputRequiredResult` whose `requestState` names the
  turn and the questions (`round_trip`; sealed by the SDK's `RequestStateBoundary`, so nothing
  is kept here and any replica that shares `TURNKEEPER_MCP_STATE_KEYS` reads it), and the retried
  call applies the answers and goes on waiting for the same turn (`resumed`);
- 2026-07-28, a task: `tasks/get` lists the questions as `inputRequests` (`input_requests`) and
  `tasks/update` applies the answers (`update`).

A client that declared no form elicitation is never asked; its call waits for the approvers.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
from collections.abc import Awaitable, Mapping
from functools import partial
from typing import Any, Final, NoReturn, TypeVar

from mcp.server.context import HandlerResult, ServerRequestContext
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types import (
    INVALID_PARAMS,
    CallToolRequestParams,
    CallToolResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    InputRequiredResult,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from turnkeeper.contracts.signals import TurnStatus
from turnkeeper.http.mcp.approvals import (
    APPROVAL_SCHEMA,
    ApprovalQuestion,
    apply,
    asked_of,
    questions,
    read_answer,
    read_answers,
)
from turnkeeper.http.mcp.calls import answer
from turnkeeper.http.mcp.serving import ServedCall, Serving
from turnkeeper.http.origins import StartedTurn
from turnkeeper.http.tokens import Identity

# The secrets that seal a 2026-07-28 call's `requestState`, comma-separated, each at least 32
# bytes; the first seals, every one opens (rotation). Unset: a key of this process only, so a
# retried call must come back to the same `turnkeeper serve`.
STATE_KEYS_ENV: Final = "TURNKEEPER_MCP_STATE_KEYS"
# How long a sealed `requestState` is good for: as long as an approval may wait by default.
STATE_TTL_S: Final = 86_400.0
# How often a waiting call looks for calls to ask about (a status query each time).
POLL_S: Final = 0.5
# Where a handshake-era task's server-to-client requests name their task (2025-11-25).
RELATED_TASK: Final = "io.modelcontextprotocol/related-task"

T = TypeVar("T")


def install(serving: Serving) -> Any:
    """Wires the approval flow into `serving`'s hooks; the `tasks/update` handler to bind."""
    serving.input_requests = input_requests
    serving.resume = partial(resumed, serving)
    serving.round_trip = partial(round_trip, serving)
    serving.task_result = partial(task_result, serving)
    return partial(update, serving)


def state_boundary(serving: Serving, audience: str) -> RequestStateBoundary:
    """The SDK's sealing of `requestState`, under `TURNKEEPER_MCP_STATE_KEYS` when set, bound to
    the caller's identity (as `serving` reads it: the token's, or `--as NAME` over stdio) and to
    `audience`.

    Raises:
        ValueError: A key shorter than 32 bytes (the SDK says how to make one).
    """
    keys = [key.strip() for key in os.environ.get(STATE_KEYS_ENV, "").split(",") if key.strip()]

    def principal(ctx: ServerRequestContext[Any, Any]) -> str:
        return serving.identity(ctx).name

    if keys:
        security = RequestStateSecurity(keys=keys, ttl=STATE_TTL_S, bind_principal=principal)
    else:
        security = RequestStateSecurity(
            keys=[secrets.token_bytes(32)], ttl=STATE_TTL_S, bind_principal=principal
        )
    return RequestStateBoundary(security, default_audience=audience)


def takes_forms(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether the client declared form elicitation (an empty `elicitation` means form)."""
    declared = ctx.session.client_capabilities
    elicitation = declared.elicitation if declared is not None else None
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)


def _modern(ctx: ServerRequestContext[Any, Any]) -> bool:
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def _elicits(ctx: ServerRequestContext[Any, Any]) -> bool:
    """A handshake-era client that takes forms, on a connection that carries them to it."""
    return not _modern(ctx) and takes_forms(ctx) and ctx.session.can_send_request


async def task_result(
    serving: Serving,
    ctx: ServerRequestContext[Any, Any],
    identity: Identity,
    task_id: str,
    ending: Awaitable[T],
) -> T:
    """`tasks/result` (2025-11-25): what `ending` (its wait for the turn's end) returns, the
    caller asked meanwhile, each question tagged with the task."""
    return await _elicit_until(serving, ctx, identity, task_id, ending, task_id)


async def round_trip(serving: Serving, call: ServedCall) -> CallToolResult | InputRequiredResult:
    """A plain call's answer: the turn's tool result, the caller asked meanwhile (handshake
    era), or, in 2026-07-28, the `InputRequiredResult` that asks it when an approval it may
    give comes before the turn's end."""
    ending = answer(serving, call)
    if not _modern(call.ctx):
        return await _elicit_until(serving, call.ctx, call.identity, call.workflow_id, ending, None)
    if not takes_forms(call.ctx):
        return await ending

    async def ask() -> InputRequiredResult:
        found = await _next_questions(serving, call.workflow_id, call.identity, set())
        state = {"turn": call.workflow_id, "asked": [q.key for q in found]}
        return InputRequiredResult.model_validate(
            {
                "inputRequests": {q.key: q.input_request for q in found},
                "requestState": json.dumps(state),
            }
        )

    result: CallToolResult | InputRequiredResult = await _first(ending, ask())
    return result


async def _elicit_until(
    serving: Serving,
    ctx: ServerRequestContext[Any, Any],
    identity: Identity,
    workflow_id: str,
    ending: Awaitable[T],
    task_id: str | None,
) -> T:
    """What `ending` returns, the caller asked about each approval it may give while it waits
    (handshake era), once each: the turn's own calls and its sub-agents' alike, since the
    turn's status lists both.

    Raises:
        MCPError: A malformed answer, or one the client sent as an error (nothing decided).
    """
    if not _elicits(ctx):
        return await ending

    async def ask() -> NoReturn:
        asked: set[str] = set()
        while True:
            for found in await _next_questions(serving, workflow_id, identity, asked):
                asked.add(found.key)
                await _ask(serving, ctx, identity, workflow_id, found, task_id)

    result: T = await _first(ending, ask())
    return result


async def resumed(
    serving: Serving, identity: Identity, params: CallToolRequestParams
) -> str | None:
    """The turn a retried 2026-07-28 call goes on with, its answers applied first; None for a
    first call. The `requestState` arrives opened by the `RequestStateBoundary`, which refused
    one it did not seal, for another identity, tool or input.

    Raises:
        MCPError: -32602 for a malformed answer, or an answer to a question not asked (nothing
            decided).
    """
    if params.request_state is None:
        return None
    try:
        state = json.loads(params.request_state)
        workflow_id, asked = str(state["turn"]), list(state["asked"])
    except (TypeError, ValueError, KeyError):
        raise MCPError(INVALID_PARAMS, "requestState is not one this server issued") from None
    raw = {key: _wire(value) for key, value in (params.input_responses or {}).items()}
    verdicts = read_answers(raw, asked)
    await apply(serving.turns, workflow_id, identity, verdicts)
    return workflow_id


async def input_requests(
    ctx: ServerRequestContext[Any, Any], identity: Identity, turn: StartedTurn, status: TurnStatus
) -> dict[str, Any]:
    """`tasks/get`'s `inputRequests` for `identity` (2026-07-28 task): empty when it is asked
    nothing (a client without form elicitation; not an approver; no key where approvers
    sign)."""
    if not takes_forms(ctx):
        return {}
    return {q.key: q.input_request for q in asked_of(identity, turn, status)}


async def update(
    serving: Serving, ctx: ServerRequestContext[Any, Any], params: Any
) -> HandlerResult:
    """`tasks/update`: applies the answers to the questions open now; answers under any other
    key are ignored, as the tasks extension asks of a server.

    Raises:
        MCPError: -32602 for a task the caller may not see, or a malformed answer (nothing
            decided).
    """
    identity = serving.identity(ctx)
    await serving.visible(identity, params.task_id)
    open_now = {q.key for q in await questions(serving.turns, params.task_id, identity)}
    responses: Mapping[str, Any] = params.input_responses
    verdicts = read_answers({k: v for k, v in responses.items() if k in open_now}, open_now)
    await apply(serving.turns, params.task_id, identity, verdicts)
    return {}


async def _next_questions(
    serving: Serving, workflow_id: str, identity: Identity, asked: set[str]
) -> list[ApprovalQuestion]:
    """The questions for `identity` not `asked` yet, once there are some (looks every
    `POLL_S`)."""
    while True:
        found = await questions(serving.turns, workflow_id, identity)
        fresh = [q for q in found if q.key not in asked]
        if fresh:
            return fresh
        await asyncio.sleep(POLL_S)


async def _ask(
    serving: Serving,
    ctx: ServerRequestContext[Any, Any],
    identity: Identity,
    workflow_id: str,
    found: ApprovalQuestion,
    task_id: str | None,
) -> None:
    """Sends one question on the request's own stream and applies the answer."""
    meta = {RELATED_TASK: {"taskId": task_id}} if task_id is not None else None
    request = ElicitRequest(
        params=ElicitRequestFormParams.model_validate(
            {"message": found.message, "requestedSchema": APPROVAL_SCHEMA, "_meta": meta}
        )
    )
    metadata = ServerMessageMetadata(related_request_id=ctx.request_id)
    try:
        reply: Any = await ctx.session.send_request(request, ElicitResult, metadata=metadata)
    except ValidationError:
        reply = None  # not an elicitation result: `read_answer` says so, naming the call
    except MCPError as err:
        raise MCPError(
            INVALID_PARAMS,
            f"the client answered the approval question on {found.call_id!r} with an error "
            f"({err.message}); nothing was decided",
        ) from None
    await apply(serving.turns, workflow_id, identity, [read_answer(found.key, reply)])


def _wire(value: Any) -> Any:
    """An input response as the client sent it (the SDK may have parsed it into a model)."""
    dump = getattr(value, "model_dump", None)
    return dump(by_alias=True, mode="json", exclude_none=True) if dump else value


async def _first(ending: Awaitable[Any], asking: Awaitable[Any]) -> Any:
    """What finishes first of `ending` and `asking` (`ending` when both have); the other is
    cancelled. An error of the first is raised."""
    end_task = asyncio.ensure_future(ending)
    ask_task = asyncio.ensure_future(asking)
    try:
        done, _ = await asyncio.wait({end_task, ask_task}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (end_task, ask_task):
            task.cancel()
        await asyncio.gather(end_task, ask_task, return_exceptions=True)
    return (end_task if end_task in done else ask_task).result()
