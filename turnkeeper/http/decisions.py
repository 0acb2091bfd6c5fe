"""A decision through the API: the approver is the token's identity, never the body's, and the
answer says why a decision cannot apply (404 no such turn for this caller or no such call, 403
not an approver, or no key where the agent's approvers have keys, 409 decided): who may decide
is checked before the `decide` update is sent, whether the call waits once its validator
refused it. Where the agent's approvers have keys, the decision is signed with the identity's
key. Steers, interrupts and cancels of such a turn are signed the same way."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Final

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import load_ssh_private_key
from pydantic import ConfigDict, JsonValue

from turnkeeper.client.errors import DecisionRefused
from turnkeeper.contracts.contract_model import ContractModel
from turnkeeper.contracts.signals import ApproveInput, DecisionRecord, PendingKind
from turnkeeper.http.access import check_visible, may_decide, visible_turn
from turnkeeper.http.tokens import Identity
from turnkeeper.http.turns import ApiError, StartedTurn, Turns

# The same variable `turnkeeper approve --key` reads, for a key that has a passphrase.
PASSPHRASE_ENV: Final = "TURNKEEPER_KEY_PASSPHRASE"


# The pending kinds a decision settles: a call's approval, or its MCP server's question.
_DECIDED: Final = ("approval", "elicitation")


class DecisionBody(ContractModel):
    """`POST /v1/turns/{id}/decisions`: the approver is who the token says, not a field."""

    # An `approver` field is refused, not ignored: a caller who sends one believes it counts.
    model_config = ConfigDict(extra="forbid")

    call_id: str
    """The tool call decided (from the turn's status or `/v1/approvals`)."""
    approved: bool
    """True approves the call, false rejects it."""
    reason: str = ""
    """Why; a rejection's reason reaches the model."""
    input: dict[str, JsonValue] | None = None
    """An edited input for the call (approvals only), checked against the tool's schema; for a
    server's question (kind `elicitation`), the answer, checked against its requested schema.
    `approved: false` declines the question, and with `reason: "cancel"` cancels it."""
    remember: bool = False
    """Approve later calls of this tool by this agent without asking."""


async def intervene(
    turns: Turns, workflow_id: str, update: str, payload: dict[str, str], identity: Identity
) -> Any:
    """A steer or an interrupt from the token's identity: as for decisions, only who may decide
    the turn's calls may send one (403 otherwise; 404 for a turn the identity may not see),
    signed with the identity's key where the agent's approvers have keys.

    Raises:
        ApiError: 403, 404, or 409 when the turn refuses it (it has ended, say).
    """
    turn = await visible_turn(turns, workflow_id, identity)
    key = approver_key(identity, turn)
    return await turns.steering(workflow_id, update, payload, key)


async def cancel_as(turns: Turns, workflow_id: str, identity: Identity) -> None:
    """Cancels the turn for `identity` (404 for a turn it may not see): where the agent's
    approvers have keys, through the `cancel` update signed with the identity's key (a keyed
    turn takes no other cancel from the API); otherwise as Temporal's cancellation.

    Raises:
        ApiError: 403 (not an approver, or no key to sign with), 404, or 409 when the turn has
            ended or refuses the signed cancel.
    """
    turn = await visible_turn(turns, workflow_id, identity)
    if not turn.request.agent.approver_keys():
        await turns.cancel(workflow_id)
        return
    await turns.cancel(workflow_id, identity.name, approver_key(identity, turn))


def approver_key(identity: Identity, turn: StartedTurn) -> Ed25519PrivateKey | None:
    """The key `identity` signs with for `turn`: None where its agent's approvers have no keys
    (nothing is signed).

    Raises:
        ApiError: 403 when the identity may not decide the turn's calls, or the approvers have
            keys and the identity has none (the turn would refuse whatever it sent unsigned).
    """
    _check_decides(identity, turn)
    agent = turn.request.agent
    if not agent.approver_keys():
        return None
    key = signing_key(identity)
    if key is None:
        raise ApiError(
            403,
            f"turns of agent {agent.id!r} take only what an approver signs, and "
            f"{identity.name!r} has no key (turnkeeper tokens add --key)",
        )
    return key


def signing_key(identity: Identity) -> Ed25519PrivateKey | None:
    """The identity's private key, when it has one (`tokens add --key`).

    Raises:
        ApiError: 500: the key file cannot be read or is not an Ed25519 key.
    """
    if identity.key_file is None:
        return None
    passphrase = os.environ.get(PASSPHRASE_ENV)
    try:
        key = load_ssh_private_key(
            Path(identity.key_file).read_bytes(), passphrase.encode() if passphrase else None
        )
    except (OSError, ValueError, TypeError) as err:
        raise ApiError(500, f"the signing key of {identity.name!r} is unusable: {err}") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise ApiError(500, f"the signing key of {identity.name!r} is not an Ed25519 key")
    return key


async def decide(
    turns: Turns, workflow_id: str, body: DecisionBody, identity: Identity
) -> list[DecisionRecord]:
    """Applies `body` as `identity`'s decision; the decisions as the turn applied them.

    Who may see and decide is read from the turn as last seen (`Turns.known`: its events or
    status were read just before, mostly) or from its first event, then the update is sent
    pinned to that turn's chain: it applies to the turn whose owner and approvers were checked,
    or fails. Whether the call waits is the update validator's to say; only a refusal costs the
    queries that choose its status.

    Raises:
        ApiError: 403, 404, 409 or 422 (an edit that does not fit the tool), saying why.
    """
    hinted = await turns.known(workflow_id)
    failed: ApiError | None = None
    try:
        key = _checked_key(identity, workflow_id, hinted)
    except ApiError:
        pass  # refused by the turn as last seen, which may be gone: read the id's turn now
    else:
        try:
            return await _send(turns, workflow_id, body, identity, hinted, key)
        except _Unreached as unreached:
            failed = unreached.error
    current = await turns.started(workflow_id)
    if failed is None or current.chain != hinted.chain:
        key = _checked_key(identity, workflow_id, current)
        try:
            return await _send(turns, workflow_id, body, identity, current, key)
        except _Unreached as unreached:
            failed = unreached.error
    # The turn the caller may decide has ended (or Temporal refused): why, as its calls say.
    await _check_waiting(turns, workflow_id, body.call_id)
    raise failed


def _checked_key(
    identity: Identity, workflow_id: str, turn: StartedTurn
) -> Ed25519PrivateKey | None:
    """The key `identity` signs its decision on `turn` with, when it may decide there.

    Raises:
        ApiError: 404 for a turn it may not see, 403 (`approver_key`).
    """
    check_visible(identity, workflow_id, turn)
    return approver_key(identity, turn)


class _Unreached(Exception):
    """The pinned update reached no running turn of its chain (or Temporal refused it)."""

    def __init__(self, error: ApiError) -> None:
        super().__init__(error.message)
        self.error = error


async def _send(
    turns: Turns,
    workflow_id: str,
    body: DecisionBody,
    identity: Identity,
    turn: StartedTurn,
    key: Ed25519PrivateKey | None,
) -> list[DecisionRecord]:
    decision = ApproveInput(
        call_id=body.call_id,
        approved=body.approved,
        reason=body.reason,
        remember=body.remember and body.approved,
        input=body.input if body.approved else None,
        approver=identity.name,
    )
    try:
        return await turns.decide(workflow_id, decision, key, turn.chain)
    except DecisionRefused as err:
        kind = await _check_waiting(turns, workflow_id, body.call_id)
        # The call waits, so the edit (or the answer to its server's question) does not fit the
        # schema, or the signature does not count (a rejection's input is dropped: no edit).
        unfit = decision.input is not None or (kind == "elicitation" and decision.approved)
        raise ApiError(422 if unfit else 409, str(err)) from None
    except ApiError as err:
        raise _Unreached(err) from None


def _check_decides(identity: Identity, turn: StartedTurn) -> None:
    agent = turn.request.agent
    if not may_decide(identity, agent.approver_names(), turn.started_by):
        raise ApiError(403, f"{identity.name!r} is not an approver of agent {agent.id!r}")


async def _check_waiting(turns: Turns, workflow_id: str, call_id: str) -> PendingKind:
    """The kind of the waiting call `call_id`.

    Raises:
        ApiError: 409 for a call decided already, 404 for one that does not wait.
    """
    status = await turns.status(workflow_id)
    for call in status.pending:
        if call.call_id == call_id and call.kind in _DECIDED:
            return call.kind
    if any(d.call_id == call_id for d in await turns.decisions(workflow_id)):
        raise ApiError(409, f"call {call_id!r} of {workflow_id!r} is already decided")
    raise ApiError(404, f"no call {call_id!r} waits for approval in {workflow_id!r}")
