"""`turnkeeper sandbox get TURN PATH`: one file of a turn's sandbox folder, as the turn's last
`run_python` or `run_shell` call left it.

The report of the ended turn (or the partial report of a failed one) names the folder's archive
in the content store; the command reads it with the environment's store and keys, as the worker
wrote it, and takes the file out in memory: nothing of the archive is unpacked onto this disk.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from turnkeeper.client import turn_files
from turnkeeper.client.connection import connect
from turnkeeper.console.commands import Connection
from turnkeeper.console.terminal import CommandError, out


async def get_file(connection: Connection, workflow_id: str, path: str, output: Path | None) -> int:
    """Writes the file to `output`, or to stdout when None."""
    client = await connect(address=connection.address, namespace=connection.namespace)
    try:
        found = await turn_files.sandbox_file(client, workflow_id, path)
    except turn_files.TurnFileMissing as missing:
        raise CommandError(str(missing)) from None
    if output is None:
        sys.stdout.buffer.write(found.data)
        sys.stdout.buffer.flush()
    else:
        await asyncio.to_thread(output.write_bytes, found.data)
        out.print(f"wrote {output} ({len(found.data)} bytes)", soft_wrap=True)
    return 0
