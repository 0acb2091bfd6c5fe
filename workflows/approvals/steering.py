"""Steering and interrupting a running turn, inside the workflow.

A `steer` is queued in the turn's state and joins the conversation just before the next model
call (`Turn.deliver_steers`): the only point where no tool call waits for its result. An
`interrupt` sets a flag that the loop reads at its safe points: before an iteration, after a
model call (its answer is kept and billed; its tool calls do not start), and around the stages
that may wait long (tool calls, approvals, external results, budget extensions), which are run
as tasks so that an interrupt cancels them: running tool activities get cancellation, calls not
started never start. Asyncio tasks, not Temporal cancellation scopes: Python's SDK has none,
and a task is how its own samples cancel part of a workflow.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from datetime import datetime
from typing import Any, TypeVar

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts import decision_signing
    from turnkeeper.contracts.messages import ToolResultBlock, ToolUseBlock
    from turnkeeper.contracts.steering import (
        CANCEL,
        INTERRUPT,
        STEER,
        CancelInput,
        InterruptInput,
        InterruptResult,
        Intervention,
        SteerInput,
        SteerResult,
    )
    from turnkeeper.workflows.approvals import signatures as signed_decisions
    from turnkeeper.workflows.turn_state import Settled, Turn

T = TypeVar("T")
Payload = SteerInput | InterruptInput | CancelInput


class Interrupted(Exception):
    """Raised in the loop at the safe point where an interrupted turn stops."""


class Steering:
    """The interrupt flag and where the model calls are, for one run of a turn."""

    def __init__(self) -> None:
        self.interrupt: Intervention | None = None
        # An approver's accepted `cancel` (workflows/approvals/cancel.py): it takes nothing more.
        self.cancel: Intervention | None = None
        # The iteration whose model call was started last: a steer accepted after it waits for
        # the next iteration's call. A continued run starts from the carried iteration.
        self.called_in = 0
        # The report is being finished (stored, recorded): nothing can change it any more.
        self.finishing = False

    def resumed(self, turn: Turn) -> None:
        self.called_in = turn.iteration

    def next_call(self, turn: Turn) -> int:
        """The iteration whose model call reads a steer accepted now."""
        return turn.iteration + 1 if self.called_in >= turn.iteration else turn.iteration

    def problem(self, turn: Turn | None, payload: Payload) -> str | None:
        """Why `payload` must not apply to the turn now, or None."""
        kind = _kind(payload)
        if turn is None:
            return "the turn has not begun"
        if turn.ended is not None or self.finishing:
            return f"the turn has ended ({turn.state}); there is nothing left to {kind}"
        if self.cancel is not None:
            who = self.cancel.author or "someone"
            return f"the turn is being cancelled (by {who}); it takes no more {kind}s"
        # A cancel still goes through: it ends the turn sooner than the interrupt's safe point.
        if self.interrupt is not None and kind != CANCEL:
            who = self.interrupt.author or "someone"
            return f"the turn is being interrupted (by {who}); it takes no more {kind}s"
        agent = turn.request.agent
        approvers = agent.approver_names()
        if approvers is not None and payload.author not in approvers:
            who = repr(payload.author) if payload.author else "an anonymous author"
            return f"{who} may not {kind} turns of this agent (approvers: {', '.join(approvers)})"
        if not agent.approver_keys():
            return None
        return _signature_problem(turn, payload, kind)

    def steer(self, turn: Turn, steer: SteerInput, now: datetime) -> SteerResult:
        record = Intervention(
            kind="steer",
            author=steer.author,
            text=steer.message,
            iteration=self.next_call(turn),
            signed=steer.signature is not None and bool(turn.request.agent.approver_keys()),
            at=now,
        )
        turn.steers.queue(record, _spent(turn, steer))
        return SteerResult(iteration=record.iteration)

    def interrupt_turn(
        self, turn: Turn, interrupt: InterruptInput, now: datetime
    ) -> InterruptResult:
        self.interrupt = stopping(turn, interrupt, now)
        turn.steers.record(self.interrupt)
        return InterruptResult(iteration=turn.iteration)

    def check(self) -> None:
        """A safe point: an interrupted turn stops here."""
        if self.interrupt is not None:
            raise Interrupted

    def stop_before_tools(self, turn: Turn, uses: list[ToolUseBlock]) -> None:
        """After a model call: an interrupted turn starts none of the calls it asked for. Each
        gets a result saying so, so that the transcript stays a valid conversation to continue."""
        if self.interrupt is None:
            return
        if uses:
            turn.record_tool_results([Settled(not_run(use)) for use in uses])
        raise Interrupted

    async def interruptible(
        self,
        stage: Coroutine[Any, Any, T],
        cancellable: Callable[[], bool] = lambda: True,
    ) -> T:
        """Runs `stage` until it ends, or until an interrupt comes while `cancellable()` holds:
        then cancels it (activities in it get cancellation) and raises `Interrupted`. A model
        call is not cancellable: the interrupt waits for its answer, which is billed."""
        task = asyncio.ensure_future(stage)
        try:
            await workflow.wait_condition(
                lambda: task.done() or (self.interrupt is not None and cancellable())
            )
        except asyncio.CancelledError:
            # The workflow itself is cancelled: so is the stage, as if it had run inline.
            task.cancel()
            await asyncio.wait([task])
            raise
        if task.done():
            return task.result()
        task.cancel()
        await asyncio.wait([task])
        if not task.cancelled() and task.exception() is None:
            return task.result()  # it ended in the same activation after all
        raise Interrupted


def stopping(turn: Turn, payload: InterruptInput | CancelInput, now: datetime) -> Intervention:
    """The record of an interrupt or a cancel that arrived now, in the turn's iteration."""
    return Intervention(
        kind="interrupt" if isinstance(payload, InterruptInput) else "cancel",
        author=payload.author,
        text=payload.reason,
        iteration=turn.iteration,
        signed=payload.signature is not None and bool(turn.request.agent.approver_keys()),
        at=now,
    )


def _kind(payload: Payload) -> str:
    """The signing kind of `payload`, which names it in refusals too."""
    if isinstance(payload, SteerInput):
        return STEER
    return INTERRUPT if isinstance(payload, InterruptInput) else CANCEL


def _signature_problem(turn: Turn, payload: Payload, kind: str) -> str | None:
    agent = turn.request.agent
    fields = payload.signed_fields(
        workflow.info().workflow_id, agent.id, turn.approvals.signed_run_id
    )
    problem = signed_decisions.intervention_problem(
        agent,
        kind,
        payload.author,
        payload.signature,
        fields,
        workflow.now(),
        turn.approvals.signing_version,
    )
    if problem is None and _spent(turn, payload) in turn.steers.spent_steers:
        return (
            f"{payload.author}'s signed steer was applied already; "
            "sign the message again to send it again"
        )
    return problem


def not_run(use: ToolUseBlock) -> ToolResultBlock:
    """The result of a call that an interrupt stopped (or kept from starting)."""
    return ToolResultBlock(
        tool_use_id=use.id,
        content=(
            "The turn was interrupted before this call's result was recorded: it did not run, "
            "or was cancelled while it ran."
        ),
        is_error=True,
    )


def _spent(turn: Turn, payload: Payload) -> str | None:
    """What names a signed steer in the turn's spent set; None for what no copy can misuse."""
    signature = payload.signature
    if not isinstance(payload, SteerInput) or signature is None:
        return None
    if not turn.request.agent.approver_keys():
        return None
    agent_id, run = turn.request.agent.id, turn.approvals.signed_run_id
    fields = payload.signed_fields(workflow.info().workflow_id, agent_id, run)
    return decision_signing.signed_digest(
        STEER, fields, signature.expires_at, turn.approvals.signing_version
    )
