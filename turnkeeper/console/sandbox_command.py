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

from temporalio.client import WorkflowExecutionStatus

from turnkeeper.activities.sandbox import folder
from turnkeeper.client.connection import connect
from turnkeeper.client.turns import outcome_of, turn_handle
from turnkeeper.console.commands import Connection
from turnkeeper.console.terminal import CommandError, out
from turnkeeper.contracts.turn import AgentReport
from turnkeeper.payloads.content_store import ContentMissingError
from turnkeeper.payloads.keyring import Keyring
from turnkeeper.payloads.stores import open_store
from turnkeeper.worker.settings import Settings


async def get_file(connection: Connection, workflow_id: str, path: str, output: Path | None) -> int:
    """Writes the file to `output`, or to stdout when None."""
    client = await connect(address=connection.address, namespace=connection.namespace)
    handle = turn_handle(client, workflow_id)
    description = await handle.describe()
    if description.status == WorkflowExecutionStatus.RUNNING:
        raise CommandError(
            f"{workflow_id} is still running; its folder is in its report once it ends."
        )
    result: asyncio.Future[AgentReport] = asyncio.ensure_future(handle.result())
    await asyncio.wait([result])
    outcome = outcome_of(workflow_id, result)
    report = outcome.report or (outcome.failure.report if outcome.failure else None)
    if report is None or report.sandbox is None:
        raise CommandError(
            f"{workflow_id} ran no run_python or run_shell call: it has no sandbox folder."
        )
    store = open_store(Settings.from_env(), Keyring.from_env())
    try:
        archive = await store.get(report.sandbox.ref)
    except ContentMissingError as missing:
        raise CommandError(
            f"the sandbox folder of {workflow_id} is not in this content store: {missing}"
        ) from None
    finally:
        await store.aclose()
    try:
        data = folder.read_file(archive, path)
    except LookupError:
        files = ", ".join(report.sandbox.files) or "none"
        raise CommandError(
            f"the sandbox folder of {workflow_id} has no file {path!r} (its files: {files})"
        ) from None
    if output is None:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    else:
        await asyncio.to_thread(output.write_bytes, data)
        out.print(f"wrote {output} ({len(data)} bytes)", soft_wrap=True)
    return 0
