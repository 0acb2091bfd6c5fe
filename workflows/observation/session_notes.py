"""A session's turn tells its session when it starts or stops waiting for a human, so that the
session's `status` query (and `turnkeeper chat`, the Web UI's current details) can say that its
running turn waits for a budget extension or an approval without querying the turn.

A signal to the parent rather than a query from it: a workflow cannot query another one, and a
turn that never waits sends nothing, so a session of many turns gains no history from it."""

from __future__ import annotations

import asyncio
from typing import Final

from temporalio import workflow
from temporalio.exceptions import is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts.names import SIGNAL_TURN_STATE
    from turnkeeper.contracts.search_attributes import SESSION_ID
    from turnkeeper.contracts.session import TurnStateNote
    from turnkeeper.contracts.signals import TurnState
    from turnkeeper.workflows.turn_state import Turn

_WAITING_OR_RUNNING: Final = (
    "running",
    "awaiting_approval",
    "awaiting_external",
    "awaiting_budget",
    "waiting",
)


class SessionNotes:
    def __init__(self) -> None:
        # A turn begins running, as the session that starts it knows.
        self._told: TurnState = "running"
        self._sending: set[asyncio.Task[None]] = set()

    def tell(self, turn: Turn) -> None:
        """Signals the session a change of the turn's state between running and a wait."""
        info = workflow.info()
        parent = info.parent
        if parent is None or info.typed_search_attributes.get(SESSION_ID) is None:
            return  # not a session's turn: its parent, if any, knows no such signal
        state = turn.state
        if state == self._told or state not in _WAITING_OR_RUNNING:
            return
        self._told = state
        note = TurnStateNote(
            turn_workflow_id=info.workflow_id,
            state=state,
            budget_request=turn.budget.budget_request,
        )
        task = asyncio.create_task(_signal(parent.workflow_id, note))
        self._sending.add(task)  # held until sent: the loop keeps only weak references
        task.add_done_callback(self._sending.discard)


async def _signal(session_id: str, note: TurnStateNote) -> None:
    try:
        await workflow.get_external_workflow_handle(session_id).signal(SIGNAL_TURN_STATE, note)
    except Exception as err:  # the session may have ended: the turn goes on regardless
        if is_cancelled_exception(err):
            raise
        workflow.logger.warning("could not tell the session the turn's state: %s", err)
