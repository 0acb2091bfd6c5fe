"""Approvals at any depth, decided at the root. A sub-agent's turn tells its parent, by the
`subagent_pending` signal, which calls wait in it and below it; the parent lists them in its
own `status.pending` (each with the `workflow_id` where it waits) and tells its own parent in
turn. An `approve` signal or `decide` update that reaches an ancestor for such a call is sent on
to the turn where the call waits, which checks it as it checks its own (approvers, signatures).

Signals rather than queries: a workflow cannot query another one, and a child that never waits
sends nothing, so a parent gains history only from its children's waits."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from datetime import datetime, timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts.names import (
        SIGNAL_APPROVE,
        SIGNAL_SUBAGENT_CANCELLED,
        SIGNAL_SUBAGENT_PENDING,
    )
    from turnkeeper.contracts.signals import (
        ApproveInput,
        DecisionRecord,
        PendingCall,
        SubagentPending,
    )
    from turnkeeper.contracts.turn import AgentReport, SubagentCancelled
    from turnkeeper.workflows.approvals.pending import PendingCalls
    from turnkeeper.workflows.turn_state import Turn


# How long a `decide` sent to an ancestor waits for the sub-agent's turn to apply the decision.
DECIDE_BELOW_TIMEOUT = timedelta(seconds=60)


class ParentNotes:
    """What a sub-agent's turn last told its parent of its waiting calls."""

    def __init__(self) -> None:
        self._told: list[PendingCall] = []
        self._sending: set[asyncio.Task[None]] = set()

    def tell(self, turn: Turn, listing: list[PendingCall]) -> None:
        """Signals the parent (of a sub-agent's turn) when the calls waiting here change."""
        parent = turn.request.parent
        if parent is None:
            return
        here = workflow.info().workflow_id
        pending = [_where(call, here, turn) for call in listing]
        if pending == self._told:
            return
        self._told = pending
        note = SubagentPending(workflow_id=here, pending=pending)
        self._send(_signal(parent.workflow_id, SIGNAL_SUBAGENT_PENDING, note))

    def forward(self, call: PendingCall, decision: ApproveInput) -> None:
        """Sends `decision`, made at this turn for a sub-agent's call, to where the call waits."""
        assert call.workflow_id is not None, "relayed calls name the turn where they wait"
        self._send(_signal(call.workflow_id, SIGNAL_APPROVE, decision))

    def _send(self, signal: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(signal)
        self._sending.add(task)  # held until sent: the loop keeps only weak references
        task.add_done_callback(self._sending.discard)


async def tell_parent_cancelled(turn: Turn, report: AgentReport) -> None:
    """A sub-agent's turn being cancelled tells its parent what it spent (its partial report),
    before it ends: the parent waits for its cancelled children, so it reads this first."""
    parent = turn.request.parent
    if parent is None:
        return
    note = SubagentCancelled(workflow_id=workflow.info().workflow_id, report=report)
    await _signal(parent.workflow_id, SIGNAL_SUBAGENT_CANCELLED, note)


def started_here(turn: Turn, workflow_id: str) -> bool:
    """Whether `workflow_id` is a sub-agent turn this turn started itself (`<here>/<name>-<k>`
    for one of its calls): the only turns whose notes it takes. A signal does not say who sent
    it, so a note that only looks nested (from a turn started by hand under this id) is not
    enough."""
    child = workflow_id.removeprefix(f"{workflow.info().workflow_id}/")
    name, _, k = child.rpartition("-")
    if child == workflow_id or not (k.isascii() and k.isdigit()):
        return False
    return turn.children.made_call(name, int(k))


def child_cancelled(turn: Turn, note: SubagentCancelled) -> bool:
    """Books a cancelled sub-agent's partial report; whether it is one of this turn's."""
    if not started_here(turn, note.workflow_id):
        return False
    turn.children.cancelled(note.workflow_id, note.report)
    return True


def child_waits(turn: Turn, pending: PendingCalls, note: SubagentPending, now: datetime) -> bool:
    """Books what sub-agent `note.workflow_id` says waits in it; whether it is one of this
    turn's. While a call waits in a sub-agent, the turn's time budget stops as it does for its
    own waits."""
    here = workflow.info().workflow_id
    if not started_here(turn, note.workflow_id):
        return False
    # Only calls that wait below this turn: a relayed call is forwarded where it says it waits.
    calls = [c for c in note.pending if c.workflow_id and c.workflow_id.startswith(f"{here}/")]
    _book(turn, pending, note.workflow_id, calls, now)
    return True


def child_ended(turn: Turn, pending: PendingCalls, child_id: str, now: datetime) -> None:
    """A sub-agent's turn ended: nothing waits in it any more."""
    _book(turn, pending, child_id, [], now)


def _book(
    turn: Turn, pending: PendingCalls, child_id: str, calls: list[PendingCall], now: datetime
) -> None:
    waited = pending.children_wait()
    pending.relay(child_id, calls)
    waits = pending.children_wait()
    if waits and not waited:
        turn.start_waiting(now)
    elif waited and not waits:
        turn.stop_waiting(now)


def _where(call: PendingCall, here: str, turn: Turn) -> PendingCall:
    """`call` as the parent lists it: a call of this turn names this turn and its agent, and
    where a signed decision binds it, this turn's first run."""
    if call.workflow_id is not None:
        return call
    where: dict[str, object] = {"workflow_id": here, "agent_id": turn.request.agent.id}
    # Only a keyed turn verifies a run id; others keep the note they always sent.
    if turn.request.agent.approver_keys() and turn.approvals.signed_run_id is not None:
        where["first_run_id"] = turn.approvals.signed_run_id
    return call.model_copy(update=where)


async def _signal(workflow_id: str, name: str, payload: object) -> None:
    try:
        await workflow.get_external_workflow_handle(workflow_id).signal(name, payload)
    except Exception as err:  # the other turn may have ended: this one goes on regardless
        if is_cancelled_exception(err):
            raise
        workflow.logger.warning("could not signal %s to %s: %s", name, workflow_id, err)


def record_of(call: PendingCall, decision: ApproveInput, now: datetime) -> DecisionRecord:
    """The `decide` answer of an ancestor: the decision as sent to the call's turn (whose
    `decisions` query holds the record it made)."""
    return DecisionRecord(
        call_id=call.call_id,
        tool=call.tool,
        approved=decision.approved,
        approver=decision.approver,
        reason=decision.reason,
        edited=decision.approved and decision.input is not None,
        signed=decision.signature is not None,
        at=now,
    )
