"""Images and documents into the content store: checked first, stored once, named by reference.

The client stores a request's attachments before it starts the turn; a worker stores those that
reach it with their bytes (the `temporal` CLI's base64, a URL) on first sight, and a tool's image
results. All of them go through `store_blocks`, so every way in meets the same checks: the media
type read from the bytes, the types the turn's providers take, the size of one attachment and of
all of them, each refused with `AttachmentRefused` before anything is stored.
"""

from __future__ import annotations

import mimetypes
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from turnkeeper.contracts.attachments import (
    IMAGE_TYPES,
    PDF,
    AttachmentBlock,
    AttachmentLimits,
    Base64Source,
    StoredSource,
    block_for,
    sniff_media_type,
)
from turnkeeper.payloads.content_store import ContentStore

OCTET_STREAM = "application/octet-stream"


class AttachmentRefused(ValueError):
    """An attachment cannot be taken; the message names it and the limit or type at fault."""


@dataclass(frozen=True)
class Loaded:
    """An attachment's bytes, read where the caller's source said, and what it claims to be."""

    data: bytes
    declared_type: str | None = None
    name: str | None = None


# Reads a block's source into bytes (the client reads files, a worker fetches allowed URLs);
# None leaves the block as it is, for a later step (a client leaves URLs to the worker).
Reader = Callable[[AttachmentBlock, str], Awaitable[Loaded | None]]


async def store_blocks(
    blocks: Sequence[AttachmentBlock],
    store: ContentStore,
    limits: AttachmentLimits,
    providers: set[str],
    read: Reader,
) -> list[AttachmentBlock]:
    """`blocks` with every source stored (stored ones kept as they are), in order.

    Raises:
        AttachmentRefused: An attachment's type or size, or all of them together, do not fit;
            nothing has been stored then.
    """
    loaded: list[tuple[AttachmentBlock, bytes, str] | AttachmentBlock] = []
    total = 0
    for index, block in enumerate(blocks, start=1):
        label = block.label(index)
        if isinstance(block.source, StoredSource):
            problem = limits.problem(label, block.source.media_type, block.source.size, providers)
            _refuse_if(problem)
            total += block.source.size
            loaded.append(block)
            continue
        item = await read(block, label)
        if item is None:
            loaded.append(block)
            continue
        media_type = checked_media_type(label, item)
        _refuse_if(limits.problem(label, media_type, len(item.data), providers))
        total += len(item.data)
        named = block.model_copy(update={"name": block.name or item.name})
        loaded.append((named, item.data, media_type))
    _refuse_if(limits.turn_problem(total))
    return [await _put(entry, store) for entry in loaded]


def checked_media_type(label: str, item: Loaded) -> str:
    """The media type of `item`, read from its bytes where they announce one.

    Raises:
        AttachmentRefused: The bytes say another type than the one declared, or a type whose
            bytes announce themselves (PNG, JPEG, GIF, WebP, PDF) was declared for bytes that
            do not.
    """
    sniffed = sniff_media_type(item.data)
    declared = item.declared_type or _guessed(item.name)
    if sniffed is not None:
        if declared not in (None, OCTET_STREAM, sniffed):
            raise AttachmentRefused(f"{label} is {sniffed} by its bytes, not {declared}")
        return sniffed
    if declared in (*IMAGE_TYPES, PDF):
        raise AttachmentRefused(f"{label} says {declared}, but its bytes are not {declared}")
    return declared or OCTET_STREAM


def stored_copy(block: AttachmentBlock, ref: str, media_type: str, size: int) -> AttachmentBlock:
    """The block as history keeps it: its bytes by reference."""
    source = StoredSource(ref=ref, media_type=media_type, size=size)
    return block_for(media_type, source, block.name)


async def load_base64(block: AttachmentBlock, label: str) -> Loaded:
    """The bytes of a `base64` source; any other source is refused, naming the block."""
    source = block.source
    if not isinstance(source, Base64Source):
        raise AttachmentRefused(f"{label}: a {source.type} source cannot be read here")
    try:
        return Loaded(source.decoded(), source.media_type)
    except ValueError as err:
        raise AttachmentRefused(f"{label}: {err}") from None


def _guessed(name: str | None) -> str | None:
    return mimetypes.guess_type(name)[0] if name else None


def _refuse_if(problem: str | None) -> None:
    if problem is not None:
        raise AttachmentRefused(problem)


async def _put(
    entry: tuple[AttachmentBlock, bytes, str] | AttachmentBlock, store: ContentStore
) -> AttachmentBlock:
    if not isinstance(entry, tuple):
        return entry
    block, data, media_type = entry
    return stored_copy(block, await store.put(data), media_type, len(data))
