"""The bytes of a conversation's attachments, read back from the content store for one model
call. The stored conversation names them by reference; only the request that goes to the provider
holds them, and it is built again for every call from the same bytes in the same place, so the
provider's prompt cache keeps matching across a turn's iterations."""

from __future__ import annotations

import base64
from collections import OrderedDict
from collections.abc import Sequence

from temporalio.exceptions import ApplicationError
from turnkeeper.contracts.attachments import (
    AttachmentBlock,
    Base64Source,
    DocumentBlock,
    ImageBlock,
    StoredSource,
)
from turnkeeper.contracts.errors import INVALID_TURN_REQUEST
from turnkeeper.contracts.messages import ContentBlock, Message, ToolResultBlock

from turnkeeper.payloads.content_store import ContentMissingError, ContentStore

# Base64 of recently used attachments: a turn reads the same ones at every iteration.
_CACHE_BYTES = 64 * 1024 * 1024


class AttachmentReader:
    """Reads attachments back for the provider, keeping the most recent in memory."""

    def __init__(self, store: ContentStore) -> None:
        self._store = store
        self._cache: OrderedDict[str, str] = OrderedDict()
        self._cached_bytes = 0

    async def with_bytes(
        self, messages: Sequence[Message], accepted: frozenset[str], provider: str
    ) -> list[Message]:
        """`messages` with each stored attachment's source replaced by its bytes in base64.

        Raises:
            ApplicationError: InvalidTurnRequest (not retried): an attachment is of a type the
                provider does not take (a fallback model of another kind), or the store lost it.
        """
        if not any(_has_attachment(message) for message in messages):
            return list(messages)
        resolved = []
        for message in messages:
            blocks = [await self._block(block, accepted, provider) for block in message.content]
            resolved.append(Message(role=message.role, content=blocks))
        return resolved

    async def _block(
        self, block: ContentBlock, accepted: frozenset[str], provider: str
    ) -> ContentBlock:
        if isinstance(block, ImageBlock | DocumentBlock):
            return await self._attachment(block, accepted, provider)
        if isinstance(block, ToolResultBlock) and not isinstance(block.content, str):
            parts = [
                await self._attachment(part, accepted, provider)
                if isinstance(part, ImageBlock | DocumentBlock)
                else part
                for part in block.content
            ]
            return block.model_copy(update={"content": parts})
        return block

    async def _attachment(
        self, block: AttachmentBlock, accepted: frozenset[str], provider: str
    ) -> AttachmentBlock:
        source = block.source
        if not isinstance(source, StoredSource):
            return block
        if source.media_type not in accepted:
            raise _refused(
                f"{block.label(0)} is {source.media_type}, which {provider} does not take"
            )
        data = await self._base64(source.ref)
        return block.model_copy(
            update={"source": Base64Source(media_type=source.media_type, data=data)}
        )

    async def _base64(self, ref: str) -> str:
        cached = self._cache.get(ref)
        if cached is not None:
            self._cache.move_to_end(ref)
            return cached
        try:
            data = base64.b64encode(await self._store.get(ref)).decode()
        except ContentMissingError as err:
            raise _refused(f"attachment {ref} cannot be read: {err}") from err
        self._cache[ref] = data
        self._cached_bytes += len(data)
        while self._cached_bytes > _CACHE_BYTES and len(self._cache) > 1:
            _, dropped = self._cache.popitem(last=False)
            self._cached_bytes -= len(dropped)
        return data


def _has_attachment(message: Message) -> bool:
    for block in message.content:
        if isinstance(block, ImageBlock | DocumentBlock):
            return True
        parts = block.content if isinstance(block, ToolResultBlock) else ""
        if not isinstance(parts, str) and any(part.type != "text" for part in parts):
            return True
    return False


def _refused(message: str) -> ApplicationError:
    return ApplicationError(
        f"invalid turn request: {message}", type=INVALID_TURN_REQUEST, non_retryable=True
    )
