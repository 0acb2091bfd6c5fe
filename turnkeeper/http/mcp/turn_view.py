"""A served turn as the MCP endpoint reads it, from Temporal alone (nothing is kept in the
server's memory: another `turnkeeper serve`, or this one after a restart, reads the same):
whether it runs and what it waits for, and once it has ended, its outcome."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

from temporalio.client import WorkflowExecutionStatus
from temporalio.service import RPCError

from turnkeeper.client.errors import TurnUnavailable
from turnkeeper.client.turns import TurnOutcome, outcome_of, turn_handle
from turnkeeper.contracts.signals import TurnStatus
from turnkeeper.http.errors import ApiError, rpc_error
from turnkeeper.http.mcp.results import TASK_STATUS, TaskStatus, outcome_status
from turnkeeper.http.turns import TurnService


@dataclass(frozen=True)
class TurnView:
    """A turn as a task shows it."""

    workflow_id: str
    status: TaskStatus
    message: str
    """What the turn is doing or waits for, or how it ended."""
    created: datetime
    updated: datetime
    """When its status last changed, as far as Temporal says: its end, the start of what it
    waits for, or its start."""
    outcome: TurnOutcome | None = None
    """Once it has ended: its report or failure."""
    turn_status: TurnStatus | None = None
    """While it runs: its status query's answer (its pending calls)."""


async def outcome(turns: TurnService, workflow_id: str) -> TurnOutcome:
    """The turn's outcome, once it has ended (waits for its end).

    Raises:
        ApiError: 404 for no such turn; 502 when Temporal refuses.
    """
    result = asyncio.ensure_future(turn_handle(turns.client, workflow_id).result())
    await asyncio.wait({result})
    try:
        return outcome_of(workflow_id, result)
    except TurnUnavailable as err:  # Temporal refused to say (outcome_of's wording)
        raise ApiError(502, str(err)) from None


# Turn states a running workflow reports while it closes, between its last step and its result.
_ENDING: Final = frozenset({"completed", "interrupted", "failed", "cancelled"})


async def view(turns: TurnService, workflow_id: str) -> TurnView:
    """The turn as it stands now (a running turn's status query, an ended one's outcome).

    Raises:
        ApiError: 404 for no such turn; 502 when Temporal refuses.
    """
    try:
        described = await turns.client.get_workflow_handle(workflow_id).describe()
    except RPCError as err:
        raise rpc_error(err, workflow_id) from None
    created = described.start_time
    if described.status == WorkflowExecutionStatus.RUNNING:
        status = await turns.status(workflow_id)
        if status.state not in _ENDING:
            since = [call.since for call in status.pending]
            return TurnView(
                workflow_id,
                TASK_STATUS[status.state],
                _doing(status),
                created,
                max(since) if since else created,
                turn_status=status,
            )
        # The turn has decided how it ends and is closing: its outcome is moments away, and a
        # task must not say `completed` without its result.
    ended = await outcome(turns, workflow_id)
    updated = described.close_time or datetime.now(UTC)
    return TurnView(
        workflow_id, outcome_status(ended), _ended(ended), created, updated, outcome=ended
    )


def _doing(status: TurnStatus) -> str:
    if status.state == "awaiting_budget" and status.budget_request is not None:
        return f"waiting for a person to extend its {status.budget_request.budget} budget"
    waiting = [f"{call.tool} ({call.kind})" for call in status.pending]
    if waiting:
        return "waiting for a person: " + ", ".join(waiting)
    return f"working: iteration {status.iteration}, {status.tool_calls} tool calls"


def _ended(ended: TurnOutcome) -> str:
    if ended.failure is not None:
        return f"{ended.failure.type}: {ended.failure.message}"
    assert ended.report is not None
    return f"the turn ended {ended.report.outcome}"
