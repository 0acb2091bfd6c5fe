"""The calls waiting for a person across turns, as `GET /v1/approvals` and the inbox show them:
each call once, with what its approver reads beside the input (the turn's task, the model's
words before the call, a write's diff, cost and budgets).

A sub-agent's call is listed by its own turn and, relayed, by each of its ancestors
(workflows/subagents/relay.py). It is shown once, as its root lists it (the turn a person
started, whose task says what it is all for), and decided there: the root passes the decision
on to the turn where the call waits, which checks it as its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime

from pydantic import JsonValue

from turnkeeper.client.turns import WaitingTurn
from turnkeeper.contracts.attachments import Base64Source, StoredSource
from turnkeeper.contracts.contract_model import ContractModel
from turnkeeper.contracts.signals import PendingCall, PendingKind, TurnStatus
from turnkeeper.contracts.turn import TurnRequest
from turnkeeper.contracts.write_preview import WritePreview
from turnkeeper.http.errors import ApiError
from turnkeeper.http.origins import HISTORIES_AT_ONCE, StartedTurn

Started = Callable[[str], Awaitable[StartedTurn]]


class ApprovalBudget(ContractModel):
    """Where the turn stands against its budgets (None: the turn has no such budget)."""

    cost_usd: float
    """What the turn has cost so far."""
    cost_budget_usd: float | None = None
    """Its cost budget."""
    cost_left_usd: float | None = None
    """What is left of it."""
    elapsed_ms: int = 0
    """The time it has worked, waits for people excluded."""
    time_budget_ms: int | None = None
    """Its time budget."""
    time_left_ms: int | None = None
    """What is left of it."""
    iteration: int = 0
    """Its current iteration."""
    max_iterations: int
    """The iterations it may take."""


class AttachmentNote(ContractModel):
    """An image or document of a turn's task, as a person reads of it beside a call: never its
    bytes (`turnkeeper attachment get TURN REF` fetches those)."""

    kind: str
    """`image` or `document`."""
    name: str | None = None
    """The file's name, when the caller gave one."""
    media_type: str | None = None
    """Its media type, when known (a URL's is known once the worker fetched it)."""
    size: int | None = None
    """Its length in bytes, when known."""
    ref: str | None = None
    """Its content reference (`sha256:…`), once stored."""


@dataclass(frozen=True)
class WaitingApproval:
    """One call waiting for a human's decision, with what the inbox shows beside it."""

    workflow_id: str
    agent_id: str
    call_id: str
    tool: str
    input: dict[str, JsonValue]
    since: datetime
    cost_usd: float
    approvers: list[str] | None
    started_by: str | None
    kind: PendingKind = "approval"
    message: str | None = None
    requested_schema: dict[str, JsonValue] | None = None
    task: str = ""
    said: str | None = None
    preview: WritePreview | None = None
    waits_in: str | None = None
    root_task: str = ""
    depth: int = 0
    budget: ApprovalBudget | None = None
    attachments: tuple[AttachmentNote, ...] = ()


async def waiting_approvals(found: list[WaitingTurn], started: Started) -> list[WaitingApproval]:
    """The calls that wait for a person in the `found` turns (`list_waiting`), each once, as
    its root turn lists it; `started` reads a turn's request (`Origins.started`)."""
    reading = asyncio.Semaphore(HISTORIES_AT_ONCE)

    async def origin(workflow_id: str) -> StartedTurn | None:
        async with reading:
            try:
                return await started(workflow_id)
            except ApiError:
                return None  # ended or gone since the listing

    turns = {t.workflow_id: t for t in found if t.status is not None}
    ids = list(turns)
    origins = dict(zip(ids, await asyncio.gather(*(origin(i) for i in ids)), strict=True))
    # Sub-agent turns the listing did not find yet (it lags): their tasks are read too.
    below = {c.workflow_id for t in turns.values() if t.status for c in t.status.pending}
    for child in sorted(w for w in below - origins.keys() if w is not None):
        origins[child] = await origin(child)
    waiting: list[WaitingApproval] = []
    for turn in turns.values():
        root = origins[turn.workflow_id]
        if root is None or root.request.parent is not None:
            continue  # a sub-agent's calls are listed by its root, which relays them
        waiting.extend(
            _approval(turn, call, root, turns, origins)
            for call in (turn.status.pending if turn.status else [])
            if call.kind in ("approval", "elicitation")
        )
    return waiting


def _approval(
    root: WaitingTurn,
    call: PendingCall,
    root_origin: StartedTurn,
    turns: dict[str, WaitingTurn],
    origins: dict[str, StartedTurn | None],
) -> WaitingApproval:
    """`call` as root turn `root` lists it: its own, or one that waits in a sub-agent's turn
    (`call.workflow_id`), whose task and budgets are shown when this server can read them."""
    assert root.status is not None
    here_id = call.workflow_id or root.workflow_id
    here = origins.get(here_id) or root_origin
    here_status = (turns[here_id].status if here_id in turns else None) or root.status
    return WaitingApproval(
        workflow_id=root.workflow_id,
        agent_id=call.agent_id or root.agent_id,
        call_id=call.call_id,
        tool=call.tool,
        input=call.input,
        since=call.since,
        cost_usd=root.status.cost_usd,
        # The decision is sent to the root, which passes it on: the root's approvers see it.
        approvers=root_origin.request.agent.approver_names(),
        started_by=root_origin.started_by,
        kind=call.kind,
        message=call.message,
        requested_schema=call.requested_schema,
        task=here.request.task.text(),
        said=call.said,
        preview=call.preview,
        waits_in=call.workflow_id,
        depth=call.workflow_id.removeprefix(root.workflow_id).count("/") if call.workflow_id else 0,
        root_task=root_origin.request.task.text(),
        budget=budget_of(here_status, here.request),
        attachments=attachment_notes(root_origin.request),
    )


def attachment_notes(request: TurnRequest) -> tuple[AttachmentNote, ...]:
    """The images and documents of `request`'s task (the root turn's, whose task the inbox
    shows), described without their bytes."""
    notes = []
    for block in request.task.attachments():
        source = block.source
        note = AttachmentNote(kind=block.type, name=block.name)
        if isinstance(source, StoredSource):
            note = note.model_copy(
                update={"media_type": source.media_type, "size": source.size, "ref": source.ref}
            )
        elif isinstance(source, Base64Source):
            # As started from the `temporal` CLI: the worker stores it at the turn's start.
            size = len(source.data) * 3 // 4 - source.data.count("=", -2)
            note = note.model_copy(update={"media_type": source.media_type, "size": size})
        notes.append(note)
    return tuple(notes)


def budget_of(status: TurnStatus, request: TurnRequest) -> ApprovalBudget:
    """The turn's standing against the budgets of its request."""
    constraints = request.task.constraints
    cost_budget, time_budget = constraints.cost_budget_usd, constraints.time_budget_ms
    return ApprovalBudget(
        cost_usd=status.cost_usd,
        cost_budget_usd=cost_budget,
        cost_left_usd=None if cost_budget is None else max(0.0, cost_budget - status.cost_usd),
        elapsed_ms=status.elapsed_ms,
        time_budget_ms=time_budget,
        time_left_ms=None if time_budget is None else max(0, time_budget - status.elapsed_ms),
        iteration=status.iteration,
        max_iterations=request.agent.max_iterations,
    )
