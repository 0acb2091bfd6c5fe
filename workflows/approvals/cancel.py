"""An approver's `cancel` update, inside the turn: checked as an interrupt is (approvers, and on
a keyed turn a signature of kind `cancel` bound to the turn's first run,
workflows/approvals/steering.py), then Temporal is asked to cancel the turn, so that it ends exactly
as a client's cancellation ends it (the cancelled path of `AgentTurnWorkflow._run`: partial report,
sub-agents cancelled, parent told). A workflow cannot request its own cancellation (the server
answers that the external workflow is not found), so the `cancel_turn` activity asks for it, naming
the turn's first run: it follows the turn across continue-as-new and never reaches a later turn
started under the same workflow id."""

from __future__ import annotations

from datetime import datetime

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts.names import ACTIVITY_CANCEL_TURN
    from turnkeeper.contracts.steering import (
        CancelInput,
        CancelResult,
        CancelTurnInput,
    )
    from turnkeeper.workflows.activity_calls import RefuseUpdate, execute
    from turnkeeper.workflows.activity_options import CANCEL_TURN_RETRY, CANCEL_TURN_TIMEOUT
    from turnkeeper.workflows.approvals.steering import Steering, stopping
    from turnkeeper.workflows.turn_state import Turn


class SignedCancels:
    """The accepted `cancel` of one run, and whether its request to Temporal is still out."""

    def __init__(self, steering: Steering) -> None:
        self._steering = steering
        self._requesting = False

    def accept(self, turn: Turn, cancel: CancelInput, now: datetime) -> CancelResult:
        """Records the cancel; from now on the turn takes no steer, interrupt or cancel."""
        record = stopping(turn, cancel, now)
        self._steering.cancel = record
        turn.steers.record(record)
        return CancelResult(iteration=turn.iteration)

    async def request(self, cancel: CancelInput) -> None:
        """Asks Temporal to cancel this turn, and returns once it has taken the request.

        Raises:
            ApplicationError: Temporal did not take it; the turn goes on and takes another cancel.
        """
        info = workflow.info()
        reason = f"cancelled by {cancel.author or 'an approver'}"
        if cancel.reason:
            reason += f": {cancel.reason}"
        target = CancelTurnInput(
            workflow_id=info.workflow_id, first_run_id=info.first_execution_run_id, reason=reason
        )
        refused = RefuseUpdate("Temporal did not take the cancellation of the turn", self._retract)
        self._requesting = True
        try:
            await execute(
                ACTIVITY_CANCEL_TURN,
                target,
                refused,
                options=workflow.ActivityConfig(
                    start_to_close_timeout=CANCEL_TURN_TIMEOUT, retry_policy=CANCEL_TURN_RETRY
                ),
            )
        finally:
            self._requesting = False

    def _retract(self) -> None:
        """Takes the accepted cancel back: Temporal did not take it, so the turn takes steers,
        interrupts and another cancel again."""
        self._steering.cancel = None

    async def settled(self) -> None:
        """Waits, as a cancelled turn ends, for an accepted cancel's request to return, so that
        its update answers before the workflow closes. Nothing to wait for without one, as in
        every history recorded before the update existed."""
        if self._requesting:
            await workflow.wait_condition(lambda: not self._requesting)
