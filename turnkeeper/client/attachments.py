"""A request's attachments, stored by the client before the turn starts.

`start_turn(…, attachments=[…])`, `turnkeeper run --attach FILE` and the HTTP API's base64
blocks all come here (through `start_turn_workflow`): files are read on the caller's machine,
every attachment is checked against the limits, and the bytes go to the content store, so that
the turn's history holds a reference, media type and size, never the bytes.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from temporalio.client import Client

from turnkeeper.client.env_numbers import whole_number
from turnkeeper.client.errors import InvalidTurnRequest
from turnkeeper.contracts.attachments import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_TURN_BYTES,
    MAX_BYTES_ENV,
    MAX_TURN_BYTES_ENV,
    URL_HOSTS_ENV,
    AttachmentBlock,
    AttachmentLimits,
    DocumentBlock,
    Image,
    PathSource,
    StoredSource,
    UrlSource,
    provider_kinds,
)
from turnkeeper.contracts.messages import TextBlock
from turnkeeper.contracts.turn import TurnRequest
from turnkeeper.payloads.attachments import AttachmentRefused, Loaded, load_base64, store_blocks
from turnkeeper.payloads.payload_driver import store_of

Attachment = str | os.PathLike[str] | Image
"""What `start_turn(attachments=[…])` takes: a file's path, or an `Image` of bytes."""


def attachment_limits(env: Mapping[str, str] | None = None) -> AttachmentLimits:
    """The limits `TURNKEEPER_ATTACHMENT_MAX_BYTES` and `…_MAX_TURN_BYTES` set (default: the
    documented ones), read by clients and workers alike.

    Raises:
        SettingsError: A value is not a whole number of at least 1 (the message names it).
    """
    source = os.environ if env is None else env
    return AttachmentLimits(
        max_bytes=whole_number(source, MAX_BYTES_ENV, DEFAULT_MAX_BYTES, minimum=1),
        max_turn_bytes=whole_number(source, MAX_TURN_BYTES_ENV, DEFAULT_MAX_TURN_BYTES, minimum=1),
    )


def url_hosts(env: Mapping[str, str] | None = None) -> frozenset[str]:
    """The hosts `TURNKEEPER_ATTACHMENT_URL_HOSTS` lets a worker fetch from (comma-separated);
    empty: none."""
    source = os.environ if env is None else env
    raw = source.get(URL_HOSTS_ENV) or ""
    return frozenset(host.strip().lower() for host in raw.split(",") if host.strip())


def with_attachments(request: TurnRequest, attachments: Sequence[Attachment]) -> TurnRequest:
    """The request with `attachments` after its input's blocks (the input's text first)."""
    if not attachments:
        return request
    given = request.task.input
    blocks = [{"type": "text", "text": given}] if isinstance(given, str) else list(given)
    blocks += [_block(item) for item in attachments]
    task = request.task.model_validate({**request.task.model_dump(), "input": blocks})
    return request.model_copy(update={"task": task})


async def store_attachments(client: Client, request: TurnRequest) -> TurnRequest:
    """The request with every attachment in the content store (a `stored` source each).

    Raises:
        InvalidTurnRequest: An attachment cannot be read, is of a type a model of the turn does
            not take, or is over a size limit (the message names it and the limit); nothing is
            stored then.
    """
    blocks = request.task.attachments()
    if all(isinstance(block.source, StoredSource | UrlSource) for block in blocks):
        return request
    store = store_of(client.data_converter)
    if store is None:
        raise InvalidTurnRequest(
            "invalid turn request: task.input: attachments need a client from "
            "turnkeeper.connect(), whose content store the workers share"
        )
    kinds = provider_kinds(request.agent.models())
    try:
        stored = await store_blocks(blocks, store, attachment_limits(), kinds, _read)
    except AttachmentRefused as err:
        raise InvalidTurnRequest(f"invalid turn request: task.input: {err}") from None
    given = iter(stored)
    task_input = [
        block if isinstance(block, TextBlock) else next(given) for block in request.task.input
    ]
    task = request.task.model_copy(update={"input": task_input})
    return request.model_copy(update={"task": task})


def _block(item: Attachment) -> AttachmentBlock:
    if isinstance(item, Image):
        return item.block()
    path = Path(item)
    # The kind of block is settled once the bytes are read (`store_blocks`).
    return DocumentBlock(source=PathSource(path=str(path)), name=path.name)


def _read_file(path: str) -> bytes:
    return Path(path).expanduser().read_bytes()


async def _read(block: AttachmentBlock, label: str) -> Loaded | None:
    source = block.source
    if isinstance(source, PathSource):
        try:
            data = await asyncio.to_thread(_read_file, source.path)
        except OSError as err:
            raise AttachmentRefused(f"{label}: cannot read {source.path}: {err.strerror}") from None
        return Loaded(data, None, block.name or Path(source.path).name)
    if isinstance(source, UrlSource):
        return None  # the worker fetches it, only from the hosts its operator allows
    return await load_base64(block, label)
