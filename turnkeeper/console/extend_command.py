"""`turnkeeper extend`: give a turn waiting in state `awaiting_budget` more budget.

The extension goes through `TurnHandle.extend_budget` (the `extend_budget` update), so a refusal
(an amount for a budget the turn does not have, an approver it does not accept, a signature that
does not verify) is an error here, with the turn's own reason.
"""

from __future__ import annotations

import json

from turnkeeper.client.client import DEFAULT_SIGNATURE_LIFETIME, turn
from turnkeeper.client.connection import connect
from turnkeeper.client.errors import DecisionRefused
from turnkeeper.client.signatures import signed_extension
from turnkeeper.client.turns import read_status
from turnkeeper.console.commands import Connection, reaching_the_turn
from turnkeeper.console.signing import Signer
from turnkeeper.console.terminal import CommandError, err, out
from turnkeeper.contracts.budget_extension import (
    AMOUNT_FIELDS,
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
    """Checks that the turn waits for a budget, then sends the extension (signed for that
    request when there is a key) or, with `print_payload`, prints it for `temporal workflow
    update execute`."""
    client = await connect(address=connection.address, namespace=connection.namespace)
    handle = turn(client, workflow_id)
    status = await read_status(handle.workflow)
    request = status.budget_request
    if request is None:
        raise CommandError(
            f"{workflow_id} is not waiting for a budget extension (state {status.state})."
        )
    if print_payload:
        if signer is not None:
            extension = signed_extension(
                extension, status, workflow_id, signer.key, signer.expires_in
            )
        _print(workflow_id, extension)
        return 0
    amounts = {AMOUNT_FIELDS[kind]: amount for kind, amount in extension.amounts().items()}
    key = signer.key if signer is not None else None
    lifetime = signer.expires_in if signer is not None else DEFAULT_SIGNATURE_LIFETIME
    try:
        with reaching_the_turn(f"extend {workflow_id!r}"):
            result = await handle.extend_budget(
                **amounts,
                approver=extension.approver,
                reason=extension.reason,
                key=key,
                expires_in=lifetime,
            )
    except DecisionRefused as refusal:
        raise CommandError(f"The turn refused the extension: {refusal}") from None
    out.print(_extended(workflow_id, request, result), soft_wrap=True)
    return 0


def _print(workflow_id: str, extension: ExtendBudgetInput) -> None:
    payload = extension.model_dump(mode="json", exclude_none=True)
    out.out(json.dumps(payload, ensure_ascii=False), highlight=False)
    err.print(
        f"send it with: temporal workflow update execute --workflow-id {workflow_id} "
        f"--name {UPDATE_EXTEND_BUDGET} --input '<the JSON above>'",
        soft_wrap=True,
    )


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
