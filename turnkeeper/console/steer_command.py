"""`turnkeeper steer`, `turnkeeper interrupt` and `turnkeeper cancel`: change a running turn's
course, stop it, or cancel it.

They go through `TurnHandle.steer` / `interrupt` / `cancel` (the `steer` and `interrupt` updates,
and with a key the `cancel` update), so a refusal (the turn has ended, the author is not among its
approvers, a signature that does not verify) is an error here with the turn's own reason.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from turnkeeper.client.client import DEFAULT_SIGNATURE_LIFETIME, TurnHandle, turn
from turnkeeper.client.connection import connect
from turnkeeper.client.errors import DecisionRefused
from turnkeeper.console.commands import Connection, reaching_the_turn
from turnkeeper.console.signing import Signer
from turnkeeper.console.terminal import CommandError, out


async def steer(
    connection: Connection, workflow_id: str, message: str, author: str, signer: Signer | None
) -> int:
    """Sends the steer (signed when there is a key) and says which model call will read it."""
    handle, key, lifetime = await _reach(connection, workflow_id, signer)
    with _refusals("steer", workflow_id):
        result = await handle.steer(message, author=author, key=key, expires_in=lifetime)
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
    handle, key, lifetime = await _reach(connection, workflow_id, signer)
    with _refusals("interrupt", workflow_id):
        result = await handle.interrupt(reason, author=author, key=key, expires_in=lifetime)
    out.print(
        f"interrupting {workflow_id} (in iteration {result.iteration}): it stops at its next "
        f"safe point with outcome interrupted; `turnkeeper result {workflow_id}` shows the report",
        soft_wrap=True,
    )
    return 0


async def cancel(
    connection: Connection, workflow_id: str, reason: str, author: str, signer: Signer | None
) -> int:
    """Cancels the turn: with a key through the signed `cancel` update, which a turn whose
    approvers have keys requires; without, as Temporal's cancellation."""
    handle, key, lifetime = await _reach(connection, workflow_id, signer)
    with _refusals("cancel", workflow_id):
        await handle.cancel(reason, author=author, key=key, expires_in=lifetime)
    out.print(
        f"cancelling {workflow_id}: it ends with outcome cancelled; its partial report stays "
        f"readable (`turnkeeper status {workflow_id}`)",
        soft_wrap=True,
    )
    return 0


async def _reach(
    connection: Connection, workflow_id: str, signer: Signer | None
) -> tuple[TurnHandle, Ed25519PrivateKey | None, timedelta]:
    client = await connect(address=connection.address, namespace=connection.namespace)
    if signer is None:
        return turn(client, workflow_id), None, DEFAULT_SIGNATURE_LIFETIME
    return turn(client, workflow_id), signer.key, signer.expires_in


@contextmanager
def _refusals(update: str, workflow_id: str) -> Iterator[None]:
    """The turn's refusal, and a turn out of reach, as the command's error."""
    try:
        with reaching_the_turn(f"{update} {workflow_id!r}"):
            yield
    except DecisionRefused as refusal:
        raise CommandError(f"The turn refused the {update}: {refusal}") from None
