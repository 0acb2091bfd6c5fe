"""A turn's files, by its id: an image or document its transcript names, and a file of its
sandbox folder as its last `run_python` or `run_shell` call left it. `turnkeeper attachment get`,
`turnkeeper sandbox get` and the HTTP API's file routes read them here.

Both are read from the content store through the client's converter (decrypted with its keys),
and only what the turn itself names: an attachment by a digest its transcript holds, a sandbox
file out of the archive its report names. Never an arbitrary object of the store.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from temporalio.client import Client, WorkflowExecutionStatus

from turnkeeper.client.turns import outcome_of, turn_handle
from turnkeeper.contracts.attachments import StoredSource, attachment_blocks
from turnkeeper.contracts.messages import Message
from turnkeeper.contracts.turn import AgentReport
from turnkeeper.ground.sandbox_archive import read_file
from turnkeeper.payloads.content_store import ContentMissingError, ContentStore
from turnkeeper.payloads.payload_driver import store_of

# What a sandbox file is served as: its bytes say nothing reliable of their type.
SANDBOX_MEDIA_TYPE = "application/octet-stream"


class TurnFileMissing(LookupError):
    """The turn names no such file (or its bytes are gone from the store); the message says
    which, and what the turn has instead."""


class TurnStillRunning(TurnFileMissing):
    """The turn's sandbox folder is in its report, which it has only once it ends."""


@dataclass(frozen=True)
class TurnFile:
    data: bytes
    media_type: str
    name: str | None


def _store(client: Client) -> ContentStore:
    store = store_of(client.data_converter)
    if store is None:
        raise TypeError("the client has no content store: connect with turnkeeper.connect()")
    return store


async def attachment(
    client: Client, workflow_id: str, transcript: list[Message], digest: str
) -> TurnFile:
    """The attachment of `transcript` (the turn's) that `digest` names: its whole reference
    (`sha256:…`) or the part after `sha256:`.

    Raises:
        TurnFileMissing: The transcript names no such attachment, or the store lost it.
    """
    for block in attachment_blocks(transcript):
        source = block.source
        if isinstance(source, StoredSource) and digest in (source.ref, source.ref[7:]):
            try:
                data = await _store(client).get(source.ref)
            except ContentMissingError as missing:
                raise TurnFileMissing(
                    f"attachment {digest} of turn {workflow_id} is not in the content store: "
                    f"{missing}"
                ) from None
            return TurnFile(data, source.media_type, block.name)
    raise TurnFileMissing(f"turn {workflow_id} has no attachment {digest}")


async def sandbox_file(client: Client, workflow_id: str, path: str) -> TurnFile:
    """One file of the turn's sandbox folder (`path` relative to it), from its report.

    Raises:
        TurnStillRunning: The turn has not ended.
        TurnFileMissing: The turn ran no sandbox call, its folder has no such file, or the store
            lost the folder.
    """
    handle = turn_handle(client, workflow_id)
    description = await handle.describe()
    if description.status == WorkflowExecutionStatus.RUNNING:
        raise TurnStillRunning(
            f"{workflow_id} is still running; its folder is in its report once it ends."
        )
    result: asyncio.Future[AgentReport] = asyncio.ensure_future(handle.result())
    await asyncio.wait([result])
    outcome = outcome_of(workflow_id, result)
    report = outcome.report or (outcome.failure.report if outcome.failure else None)
    if report is None or report.sandbox is None:
        raise TurnFileMissing(
            f"{workflow_id} ran no run_python or run_shell call: it has no sandbox folder."
        )
    try:
        archive = await _store(client).get(report.sandbox.ref)
    except ContentMissingError as missing:
        raise TurnFileMissing(
            f"the sandbox folder of {workflow_id} is not in this content store: {missing}"
        ) from None
    try:
        data = read_file(archive, path)
    except LookupError:
        files = ", ".join(report.sandbox.files) or "none"
        raise TurnFileMissing(
            f"the sandbox folder of {workflow_id} has no file {path!r} (its files: {files})"
        ) from None
    return TurnFile(data, SANDBOX_MEDIA_TYPE, path.rsplit("/", 1)[-1])
