"""`turnkeeper attachment get TURN DIGEST`: the bytes of an image or document a turn holds, read
from the content store (decrypted with the deployment's keys).

Only a digest that the turn's transcript names is read: the command fetches a turn's own
attachments, never an arbitrary object of the store.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from turnkeeper.client import turn_files
from turnkeeper.client.connection import connect
from turnkeeper.client.turns import turn_handle
from turnkeeper.console.commands import Connection, read_transcript
from turnkeeper.console.terminal import CommandError, err


async def get(connection: Connection, workflow_id: str, digest: str, to: Path | None) -> int:
    """Writes the attachment to `to`, or to stdout when it is None (or `-`)."""
    client = await connect(address=connection.address, namespace=connection.namespace)
    transcript = await read_transcript(turn_handle(client, workflow_id))
    try:
        found = await turn_files.attachment(client, workflow_id, transcript, digest)
    except turn_files.TurnFileMissing as missing:
        raise CommandError(str(missing), exit_code=1) from None
    if to is None or str(to) == "-":
        sys.stdout.buffer.write(found.data)
        sys.stdout.buffer.flush()
        return 0
    await asyncio.to_thread(to.write_bytes, found.data)
    name = found.name or "attachment"
    err.print(f"wrote {name} ({found.media_type}, {len(found.data)} bytes) to {to}")
    return 0
