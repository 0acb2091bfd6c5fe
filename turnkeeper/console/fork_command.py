"""`turnkeeper fork`: start a new turn from an earlier one's conversation as it stood before one
of its iterations, with the model or the system prompt changed; prints the new workflow id."""

from __future__ import annotations

from turnkeeper.client.connection import connect
from turnkeeper.client.fork import ForkChanges, ForkError, fork_turn
from turnkeeper.console.commands import Connection
from turnkeeper.console.terminal import CommandError, out


async def fork(
    connection: Connection,
    workflow_id: str,
    at_iteration: int,
    changes: ForkChanges,
    new_id: str | None,
) -> int:
    client = await connect(address=connection.address, namespace=connection.namespace)
    try:
        fork_id = await fork_turn(client, workflow_id, at_iteration, changes, new_id)
    except ForkError as error:
        raise CommandError(str(error)) from None
    out.out(fork_id, highlight=False)
    return 0
