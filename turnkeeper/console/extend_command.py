"""`turnkeeper extend`: give a turn waiting in state `awaiting_budget` more budget.

The extension goes through the `extend_budget` update, so a refusal (an amount for a budget the
turn does not have, an approver it does not accept, a signature that does not verify) is an
error here, with the turn's own reason.
"""

from __future__ import annotations

import json

from temporalio.client import WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError

from turnkeeper.client.connection import connect
from turnkeeper.client.turns import read_status, turn_handle
from turnkeeper.console.commands import Connection
from turnkeeper.console.signing import Signer
from turnkeeper.console.terminal import CommandError, err, out
from turnkeeper.contracts.budget_extension import (
    BudgetRequest,
    ExtendBudgetInput,
    ExtendBudgetResult,
)
from turnkeeper.contracts.names import UPDATE_EXTEND_BUDGET


async def extend(
    connection: Connection,
    workflow_id: str,
    extension: ExtendBudgetInput,
    signer: Signer | None,
    print_payload: bool = False,
) -> int:
    """Checks that the turn waits for a budget, signs the extension for that request when there
    is a key, then sends it (or, with `print_payload`, prints it for `temporal workflow update
    execute`)."""
    client = await connect(address=connection.address, namespace=connection.namespace)
    handle = turn_handle(client, workflow_id)
    status = await read_status(handle)
    request = status.budget_request
    if request is None:
        raise CommandError(
            f"{workflow_id} is not waiting for a budget extension (state {status.state})."
        )
    if signer is not None:
        extension = signer.sign_extension(
            extension, workflow_id, status.agent_id, request.number, status.signing_version
        )
    payload = extension.model_dump(mode="json", exclude_none=True)
    if print_payload:
        out.out(json.dumps(payload, ensure_ascii=False), highlight=False)
        err.print(
            f"send it with: temporal workflow update execute --workflow-id {workflow_id} "
            f"--name {UPDATE_EXTEND_BUDGET} --input '<the JSON above>'",
            soft_wrap=True,
        )
        return 0
    try:
        result = await handle.execute_update(
            UPDATE_EXTEND_BUDGET, payload, result_type=ExtendBudgetResult
        )
    except WorkflowUpdateFailedError as error:
        cause = error.cause
        reason = cause.message if isinstance(cause, ApplicationError) else str(cause)
        raise CommandError(f"The turn refused the extension: {reason}") from None
    except RPCError as error:
        # The turn may have ended between the status check and the update.
        raise CommandError(f"Could not extend {workflow_id!r}: {error.message}") from None
    out.print(_extended(workflow_id, request, result), soft_wrap=True)
    return 0


def _extended(workflow_id: str, request: BudgetRequest, result: ExtendBudgetResult) -> str:
    limits = result.limits
    now = [
        f"cost ${limits.cost_budget_usd:g}" if limits.cost_budget_usd is not None else "",
        f"time {limits.time_budget_ms} ms" if limits.time_budget_ms is not None else "",
        f"{limits.max_iterations} iterations",
        f"{limits.max_tool_interactions} tool interactions"
        if limits.max_tool_interactions is not None
        else "",
    ]
    signed = f", signed by {result.extension.approver}" if result.extension.signed else ""
    return (
        f"extended the {request.budget.replace('_', ' ')} budget of {workflow_id} "
        f"(request {request.number}{signed}); budgets now: " + ", ".join(p for p in now if p)
    )
