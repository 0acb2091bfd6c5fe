"""The `cancel_turn` activity: asks Temporal to cancel a turn whose `cancel` update an approver
sent and the turn accepted (workflows/approvals/cancel.py). A workflow cannot request its own
cancellation, so the worker's client does it, naming the turn's first run."""

from __future__ import annotations

from temporalio import activity
from temporalio.service import RPCError, RPCStatusCode
from turnkeeper.contracts.names import ACTIVITY_CANCEL_TURN
from turnkeeper.contracts.steering import CancelTurnInput

from turnkeeper.ground.logs import get_logger

log = get_logger(__name__)


@activity.defn(name=ACTIVITY_CANCEL_TURN)
async def cancel_turn(target: CancelTurnInput) -> None:
    """Requests cancellation of the turn `target` names; a turn that has ended already needs
    none (Temporal answers "not found" for it), and that is not a failure."""
    handle = activity.client().get_workflow_handle(
        target.workflow_id, first_execution_run_id=target.first_run_id
    )
    try:
        await handle.cancel(reason=target.reason)
    except RPCError as err:
        if err.status != RPCStatusCode.NOT_FOUND:
            raise
        log.info("cancel_turn_ended_already", workflow_id=target.workflow_id)
