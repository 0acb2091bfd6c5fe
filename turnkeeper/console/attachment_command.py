"""`turnkeeper attachment get TURN DIGEST`: the bytes of an image or document a turn holds, read
from the content store (decrypted with the deployment's keys).

Only a digest that the turn's transcript names is read: the command fetches a turn's own
attachments, never an arbitrary object of the store.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from turnkeeper.client.connection import connect
from turnkeeper.client.turns import turn_handle
from turnkeeper.console.commands import Connection, read_transcript
from turnkeeper.console.terminal import CommandError, err
from turnkeeper.contracts.attachments import AttachmentBlock, StoredSource, attachment_blocks
from turnkeeper.payloads.payload_driver import store_of


async def get(connection: Connection, workflow_id: str, digest: str, to: Path | None) -> int:
    """Writes the attachment to `to`, or to stdout when it is None (or `-`)."""
    client = await connect(address=connection.address, namespace=connection.namespace)
    blocks = list(attachment_blocks(await read_transcript(turn_handle(client, workflow_id))))
    block = _named(blocks, digest)
    if block is None:
        raise CommandError(f"turn {workflow_id} has no attachment {digest}", exit_code=1)
    assert isinstance(block.source, StoredSource)
    store = store_of(client.data_converter)
    assert store is not None  # the console's client is connect()'s
    data = await store.get(block.source.ref)
    if to is None or str(to) == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return 0
    await asyncio.to_thread(to.write_bytes, data)
    name = block.name or "attachment"
    err.print(f"wrote {name} ({block.source.media_type}, {len(data)} bytes) to {to}")
    return 0


def _named(blocks: list[AttachmentBlock], digest: str) -> AttachmentBlock | None:
    """The stored block `digest` names: its whole reference (`sha256:…`) or the part after
    `sha256:`."""
    for block in blocks:
        source = block.source
        if isinstance(source, StoredSource) and digest in (source.ref, source.ref[7:]):
            return block
    return None
