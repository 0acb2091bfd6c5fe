"""`turnkeeper steer` and `turnkeeper interrupt`: change a running turn's course, or stop it.

Both go through `TurnHandle.steer` / `TurnHandle.interrupt` (the `steer` and `interrupt`
updates), so a refusal (the turn has ended, the author is not among its approvers, a signature
that does not verify) is an error here with the turn's own reason.
"""

from __future__ import annotations

from datetime import timedelta

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from turnkeeper.client.client import DEFAULT_SIGNATURE_LIFETIME, turn
from turnkeeper.client.connection import connect
from turnkeeper.client.errors import DecisionRefused
from turnkeeper.console.commands import Connection, reaching_the_turn
from turnkeeper.console.signing import Signer
from turnkeeper.console.terminal import CommandError, out


async def steer(
    connection: Connection, workflow_id: str, message: str, author: str, signer: Signer | None
) -> int:
    """Sends the steer (signed when there is a key) and says which model call will read it."""
    client = await connect(address=connection.address, namespace=connection.namespace)
    handle = turn(client, workflow_id)
    key, lifetime = _signing(signer)
    try:
        with reaching_the_turn(f"steer {workflow_id!r}"):
            result = await handle.steer(message, author=author, key=key, expires_in=lifetime)
    except DecisionRefused as refusal:
        raise CommandError(f"The turn refused the steer: {refusal}") from None
    out.print(
        f"steered {workflow_id}: the message joins the conversation before the model call "
        f"of iteration {result.iteration}",
        soft_wrap=True,
    )
    return 0


async def interrupt(
    connection: Connection, workflow_id: str, reason: str, author: str, signer: Signer | None
) -> int:
    """Sends the interrupt (signed when there is a key); the turn stops at its next safe
    point."""
    client = await connect(address=connection.address, namespace=connection.namespace)
    handle = turn(client, workflow_id)
    key, lifetime = _signing(signer)
    try:
        with reaching_the_turn(f"interrupt {workflow_id!r}"):
            result = await handle.interrupt(reason, author=author, key=key, expires_in=lifetime)
    except DecisionRefused as refusal:
        raise CommandError(f"The turn refused the interrupt: {refusal}") from None
    out.print(
        f"interrupting {workflow_id} (in iteration {result.iteration}): it stops at its next "
        f"safe point with outcome interrupted; `turnkeeper result {workflow_id}` shows the report",
        soft_wrap=True,
    )
    return 0


def _signing(signer: Signer | None) -> tuple[Ed25519PrivateKey | None, timedelta]:
    if signer is None:
        return None, DEFAULT_SIGNATURE_LIFETIME
    return signer.key, signer.expires_in
