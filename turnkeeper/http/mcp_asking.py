"""Asking the MCP caller while a served turn waits for approval (docs/mcp-serve.md, Approvals
over MCP), in each protocol era:

- handshake era (2024-11-05 … 2025-11-25), a plain call or `tasks/result`: the server sends
  `elicitation/create` on the call's own stream (for a task, tagged with the task's id in
  `_meta["io.modelcontextprotocol/related-task"]`) and applies the answer (`elicit_until_ended`);
- 2026-07-28, a plain call: the call returns an `InputRequiredResult` whose `requestState` names
  the turn and the questions asked (sealed by the SDK's `RequestStateBoundary`, nothing kept in
  the server), and the retried call applies the answers (`ended_or_asked`, `resume`);
- 2026-07-28, a task: `tasks/get` lists the questions as `inputRequests` (`input_requests`) and
  `tasks/update` applies the answers (`update_task`).

A client that declared no form elicitation is never asked; its call waits for the approvers.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Mapping
from typing import Any, Final, NoReturn, TypeVar

from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types import (
    INVALID_PARAMS,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    InputRequiredResult,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from turnkeeper.http.mcp_approvals import (
    APPROVAL_SCHEMA,
    ApprovalQuestion,
    apply,
    questions,
    read_answer,
    read_answers,
)
from turnkeeper.http.tokens import Identity
from turnkeeper.http.turns import Turns

# How often a waiting call looks for calls to ask about: a status query each time.
POLL_S: Final = 0.25
# Where a handshake-era task's server-to-client requests name their task (2025-11-25).
RELATED_TASK: Final = "io.modelcontextprotocol/related-task"

T = TypeVar("T")


def asks_by_elicitation(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether the caller can be asked mid-call: a handshake-era client that declared form
    elicitation, on a connection that can carry the server's request back to it."""
    return (
        ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS
        and takes_forms(ctx)
        and ctx.session.can_send_request
    )


def asks_by_input_required(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether the caller can be asked through `input_required`: a 2026-07-28 client that
    declared form elicitation on this request."""
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS and takes_forms(ctx)


def takes_forms(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether the client declared form elicitation (an empty `elicitation` means form)."""
    declared = ctx.session.client_capabilities
    elicitation = declared.elicitation if declared is not None else None
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)


async def next_questions(
    turns: Turns, workflow_id: str, identity: Identity, asked: set[str]
) -> list[ApprovalQuestion]:
    """The questions for `identity` on `workflow_id` that were not `asked` yet, once there are
    some (it waits, looking every `POLL_S`)."""
    while True:
        found = [q for q in await questions(turns, workflow_id, identity) if q.key not in asked]
        if found:
            return found
        await asyncio.sleep(POLL_S)


async def elicit_until_ended(
    ending: Awaitable[T],
    ctx: ServerRequestContext[Any, Any],
    turns: Turns,
    workflow_id: str,
    identity: Identity,
    task_id: str | None = None,
) -> T:
    """What `ending` (the wait for the turn's end) returns, asking the caller about each call
    that waits for approval meanwhile (handshake era; `task_id` for `tasks/result`).

    Raises:
        MCPError: A malformed answer, or one the client sent as an error (nothing decided).
    """
    if not asks_by_elicitation(ctx):
        return await ending

    async def ask() -> NoReturn:
        asked: set[str] = set()
        while True:
            for found in await next_questions(turns, workflow_id, identity, asked):
                asked.add(found.key)
                answer = await _elicit(ctx, found, task_id)
                await apply(turns, workflow_id, identity, [read_answer(found.key, answer)])

    return await _first(ending, ask())


async def ended_or_asked(
    ending: Awaitable[T],
    ctx: ServerRequestContext[Any, Any],
    turns: Turns,
    workflow_id: str,
    identity: Identity,
) -> T | InputRequiredResult:
    """What `ending` returns, or, when a call waits for an approval `identity` may give first,
    the `InputRequiredResult` that asks about it (2026-07-28 plain call)."""
    if not asks_by_input_required(ctx):
        return await ending

    async def ask() -> InputRequiredResult:
        found = await next_questions(turns, workflow_id, identity, set())
        state = {"turn": workflow_id, "asked": [q.key for q in found], "by": identity.name}
        return InputRequiredResult.model_validate(
            {
                "inputRequests": {q.key: q.input_request for q in found},
                "requestState": json.dumps(state),
            }
        )

    return await _first(ending, ask())


async def resume(params: Mapping[str, Any], turns: Turns, identity: Identity) -> str | None:
    """The turn a retried 2026-07-28 call continues, its answers applied first; None for a
    first call (no `requestState`).

    Raises:
        MCPError: `INVALID_PARAMS` for a state that is not ours or not this identity's, or a
            malformed answer (nothing decided).
    """
    sealed = params.get("requestState")
    if sealed is None:
        return None
    try:
        state = json.loads(sealed)
        workflow_id, asked, by = state["turn"], state["asked"], state["by"]
    except (TypeError, ValueError, KeyError):
        raise MCPError(INVALID_PARAMS, "requestState is not one this server issued") from None
    if by != identity.name:
        raise MCPError(INVALID_PARAMS, "requestState was issued to another identity")
    verdicts = read_answers(params.get("inputResponses") or {}, asked)
    await apply(turns, workflow_id, identity, verdicts)
    return str(workflow_id)


async def input_requests(
    turns: Turns, workflow_id: str, identity: Identity
) -> dict[str, dict[str, Any]]:
    """`tasks/get`'s `inputRequests` for `identity` (2026-07-28 task): empty when it is asked
    nothing, and the task is then `working` as far as this caller can help it."""
    return {q.key: q.input_request for q in await questions(turns, workflow_id, identity)}


async def update_task(
    turns: Turns, workflow_id: str, identity: Identity, responses: Mapping[str, Any]
) -> list[str]:
    """`tasks/update`: applies the answers to the questions open now (answers under any other
    key are ignored, as the tasks extension says); the call ids decided.

    Raises:
        MCPError: `INVALID_PARAMS` for a malformed answer (nothing decided).
    """
    open_now = {q.key for q in await questions(turns, workflow_id, identity)}
    verdicts = read_answers({k: v for k, v in responses.items() if k in open_now}, open_now)
    return await apply(turns, workflow_id, identity, verdicts)


async def _elicit(
    ctx: ServerRequestContext[Any, Any], found: ApprovalQuestion, task_id: str | None
) -> ElicitResult | dict[str, Any]:
    """Sends the question on the call's own stream; the client's answer as it came."""
    meta = {RELATED_TASK: {"taskId": task_id}} if task_id is not None else None
    request = ElicitRequest(
        params=ElicitRequestFormParams.model_validate(
            {"message": found.message, "requestedSchema": APPROVAL_SCHEMA, "_meta": meta}
        )
    )
    try:
        return await ctx.session.send_request(
            request, ElicitResult, metadata=ServerMessageMetadata(related_request_id=ctx.request_id)
        )
    except ValidationError:
        return {}  # not an elicitation result: `read_answer` says so, naming the call
    except MCPError as err:
        raise MCPError(
            INVALID_PARAMS,
            f"the client answered the approval question on {found.call_id!r} with an error "
            f"({err.message}); nothing was decided",
        ) from None


async def _first(ending: Awaitable[T], asking: Awaitable[Any]) -> Any:
    """What finishes first of `ending` and `asking`; the other is cancelled. An error of
    either is raised."""
    end_task = asyncio.ensure_future(ending)
    ask_task = asyncio.ensure_future(asking)
    try:
        done, _ = await asyncio.wait({end_task, ask_task}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (end_task, ask_task):
            task.cancel()
        await asyncio.gather(end_task, ask_task, return_exceptions=True)
    return (end_task if end_task in done else ask_task).result()
