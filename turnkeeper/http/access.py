"""Who may do what over the HTTP API (docs/http-api.md, Who may do what), decided from the
signed-in identity at the point of each action.

- An **operator** starts turns for any tenant at any price, sees every turn, cancels any, and
  manages tenants.
- A **member**'s turns are billed to its tenant, which the server sets; it may set no price. A
  member without a tenant starts turns without one only.
- A turn is seen (status, events, steer, interrupt, cancel) by its owner (`StartedBy`), the
  approvers of its agent and the operators; to anyone else it does not exist (the same 404 as a
  missing turn, so ids do not leak).
- A call is decided by the agent's approvers; an agent without `approvers` is decided by the
  turn's owner and the operators (before identities had roles, by any token).
"""

from __future__ import annotations

import asyncio
from typing import Final

from turnkeeper.contracts.signals import TurnStatus
from turnkeeper.contracts.turn import AgentSpec, FallbackModel, TurnRequest
from turnkeeper.http.errors import ApiError, no_turn
from turnkeeper.http.origins import HISTORIES_AT_ONCE
from turnkeeper.http.tokens import Identity
from turnkeeper.http.turns import StartedTurn, Turns, TurnSummary

# `GET /v1/turns`: the most turns one page lists, and how many of the newest turns of the
# namespace are looked at for turns a member sees as an approver (not as their owner).
MAX_PAGE: Final = 200
DEFAULT_PAGE: Final = 50
APPROVER_SCAN: Final = 200


def billed_request(request: TurnRequest, identity: Identity) -> TurnRequest:
    """`request` as `identity` may start it: a member's billed to its tenant.

    Raises:
        ApiError: 403 for a member's price, or a tenant that is not the member's.
    """
    if identity.is_operator:
        return request
    priced = priced_fields(request.agent)
    if priced:
        raise ApiError(
            403,
            f"only an operator may set a price; {identity.name!r} is a member "
            f"(priced: {', '.join(priced)})",
        )
    if request.tenant is not None and request.tenant != identity.tenant:
        if identity.tenant is None:
            raise ApiError(
                403, f"{identity.name!r} has no tenant and may start turns without one only"
            )
        raise ApiError(
            403,
            f"{identity.name!r} starts turns for its tenant {identity.tenant!r} only, "
            f"not for {request.tenant!r}",
        )
    return request.model_copy(update={"tenant": identity.tenant})


def priced_fields(agent: AgentSpec, path: str = "agent") -> list[str]:
    """Where `agent` sets a price of its own: `agent.price`, a fallback entry's `price`, and
    the same in each sub-agent (which runs billed to the same tenant)."""
    found = [f"{path}.price"] if agent.price is not None else []
    found += [
        f"{path}.fallback_models[{i}].price"
        for i, entry in enumerate(agent.fallback_models)
        if isinstance(entry, FallbackModel) and entry.price is not None
    ]
    for i, sub in enumerate(agent.subagents):
        found += priced_fields(sub.agent, f"{path}.subagents[{i}].agent")
    return found


def may_decide(identity: Identity, approvers: list[str] | None, started_by: str | None) -> bool:
    """Whether `identity` decides the calls of a turn whose agent names `approvers` (None: the
    agent names none, so the turn's owner and the operators decide)."""
    if approvers is None:
        return identity.is_operator or started_by == identity.name
    return identity.name in approvers


def may_see(identity: Identity, approvers: list[str] | None, started_by: str | None) -> bool:
    """Whether the turn exists for `identity`: its owner, an approver, or an operator."""
    return (
        identity.is_operator
        or started_by == identity.name
        or may_decide(identity, approvers, started_by)
    )


def check_visible(identity: Identity, workflow_id: str, turn: StartedTurn) -> None:
    """Nothing when `identity` may see `turn`.

    Raises:
        ApiError: 404, exactly as for a missing turn, when it may not.
    """
    if not may_see(identity, turn.request.agent.approver_names(), turn.started_by):
        raise no_turn(workflow_id)


async def visible_turn(turns: Turns, workflow_id: str, identity: Identity) -> StartedTurn:
    """The turn as it started, when `identity` may see it.

    Raises:
        ApiError: 404 for a missing turn and for one `identity` may not see, alike.
    """
    turn = await turns.started(workflow_id)
    check_visible(identity, workflow_id, turn)
    return turn


async def visible_status(
    turns: Turns, workflow_id: str, identity: Identity
) -> tuple[StartedTurn, TurnStatus]:
    """The turn as it started and its status, both asked at once (each is a round trip to
    Temporal: a decision's latency is what they add), when `identity` may see it.

    Raises:
        ApiError: 404 for a missing turn and for one `identity` may not see, alike; what the
            status query met otherwise (said only to who may see the turn).
    """
    turn, status = await asyncio.gather(
        turns.started(workflow_id), turns.status(workflow_id), return_exceptions=True
    )
    if isinstance(turn, BaseException):
        raise turn
    check_visible(identity, workflow_id, turn)
    if isinstance(status, BaseException):
        raise status
    return turn, status


async def visible_turns(
    turns: Turns, identity: Identity, state: str | None, limit: int
) -> list[TurnSummary]:
    """The newest `limit` turns `identity` may see, newest first.

    An operator's are one listing. A member's are the turns it started (one listing by
    `StartedBy`) and, among the `APPROVER_SCAN` newest turns of the namespace, those whose agent
    names it as an approver: who approves is in each turn's request, not in a search attribute,
    so an older turn that a member only approves is not listed (it is still readable by id).
    """
    if identity.is_operator:
        return await turns.list_turns(state, None, limit)
    own, newest = await asyncio.gather(
        turns.list_turns(state, identity.name, limit),
        turns.list_turns(state, None, APPROVER_SCAN),
    )
    others = [t for t in newest if t.started_by != identity.name]
    reading = asyncio.Semaphore(HISTORIES_AT_ONCE)

    async def approves(summary: TurnSummary) -> bool:
        async with reading:
            try:
                request = await turns.run_request(summary.workflow_id, summary.run_id)
            except ApiError:
                return False  # gone since the listing
        return may_decide(identity, request.agent.approver_names(), summary.started_by)

    approved = await asyncio.gather(*(approves(summary) for summary in others))
    found = own + [summary for summary, ok in zip(others, approved, strict=True) if ok]
    return sorted(found, key=lambda s: s.started, reverse=True)[:limit]


def check_operator(identity: Identity, action: str) -> None:
    """Nothing when `identity` is an operator.

    Raises:
        ApiError: 403 for a member, naming `action`.
    """
    if not identity.is_operator:
        raise ApiError(403, f"only an operator may {action}; {identity.name!r} is a member")


def check_tenant_reader(identity: Identity, tenant: str) -> None:
    """Nothing when `identity` may read `tenant`: an operator, or a member of it.

    Raises:
        ApiError: 403 for anyone else.
    """
    if not identity.is_operator and identity.tenant != tenant:
        raise ApiError(403, f"{identity.name!r} may read its own tenant only, not {tenant!r}")
