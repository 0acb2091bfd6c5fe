"""Decisions, budget extensions, steers, interrupts and cancels signed for what the turn waits
on: the call's tool and input (or the budget request's number), in the signing format the turn's
status says it verifies, bound to the turn's first run where that format binds it (3).
`TurnHandle` signs what it sends with these; the console signs what it prints (`--print`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TypeVar

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from turnkeeper.client.errors import DecisionRefused, UnsignableDecision
from turnkeeper.contracts.budget_extension import ExtendBudgetInput
from turnkeeper.contracts.signals import ApproveInput, TurnStatus
from turnkeeper.contracts.steering import CancelInput, InterruptInput, SteerInput

Intervention = TypeVar("Intervention", SteerInput, InterruptInput, CancelInput)


def signed_decision(
    decision: ApproveInput,
    status: TurnStatus,
    workflow_id: str,
    key: Ed25519PrivateKey,
    expires_in: timedelta,
) -> ApproveInput:
    """`decision` signed with `key` for the call it names (`*`: every waiting call) of the turn
    `workflow_id` whose status is `status`, valid from now for `expires_in`.

    Raises:
        DecisionRefused: No such call waits.
        UnsignableDecision: The call's input holds a value canonical JSON cannot express.
    """
    call = status.signed_call(workflow_id, decision.call_id)
    if call is None:
        raise DecisionRefused(f"call {decision.call_id!r} is not waiting in {workflow_id}")
    expires = datetime.now(UTC) + expires_in
    try:
        return decision.signed_with(key, call, expires, status.signing_version)
    except ValueError as err:
        raise UnsignableDecision(
            f"cannot sign a decision on {decision.call_id!r}: its input is not canonical JSON "
            f"({err}); no signed decision can approve it"
        ) from None


def signed_extension(
    extension: ExtendBudgetInput,
    status: TurnStatus,
    workflow_id: str,
    key: Ed25519PrivateKey,
    expires_in: timedelta,
) -> ExtendBudgetInput:
    """`extension` signed with `key` for the budget request the turn `workflow_id` waits on
    (`status`), valid from now for `expires_in`.

    Raises:
        DecisionRefused: The turn waits for no budget extension.
    """
    request = status.budget_request
    if request is None:
        raise DecisionRefused(f"{workflow_id} is not waiting for a budget extension")
    expires = datetime.now(UTC) + expires_in
    return extension.signed_with(
        key,
        workflow_id,
        status.agent_id,
        request.number,
        expires,
        status.signing_version,
        status.signed_run_id(),
    )


def signed_intervention(
    payload: Intervention,
    status: TurnStatus,
    workflow_id: str,
    key: Ed25519PrivateKey,
    expires_in: timedelta,
) -> Intervention:
    """A `steer`, `interrupt` or `cancel` payload signed with `key` for the turn `workflow_id`
    (whose status is `status`), valid from now for `expires_in`."""
    expires = datetime.now(UTC) + expires_in
    version, run = status.signing_version, status.signed_run_id()
    return payload.signed_with(key, workflow_id, status.agent_id, expires, version, run)
