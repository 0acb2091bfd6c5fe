"""The conversation as a chain of content-addressed nodes: `{parent, message}`.

A model call receives only the reference of the stored conversation plus the few messages that
are new since the last call; appending is O(new content), and every node is immutable, so a
retried or replayed call that appends the same message gets the same reference back.
"""

from __future__ import annotations

import json
from collections import OrderedDict

from pydantic import TypeAdapter

from activities.store.content_store import ContentStore
from contracts.activity_io import BlockRef, CallContext, ConversationDelta, MessageDraft
from contracts.messages import ContentBlock, Message

_BLOCK = TypeAdapter(ContentBlock)


class ConversationStore:
    def __init__(self, store: ContentStore, *, cache_size: int = 512) -> None:
        self._store = store
        self._cache: OrderedDict[str, tuple[Message, ...]] = OrderedDict()
        self._cache_size = cache_size

    async def resolve(self, delta: ConversationDelta) -> tuple[str | None, list[Message]]:
        """Stores the delta's new messages; returns the new head and the whole conversation."""
        head = delta.base
        messages = list(await self.load(head)) if head else []
        for draft in delta.append:
            message = await self._materialize(draft)
            head = await self.append(head, message, messages)
        return head, messages

    async def append(self, base: str | None, message: Message, messages: list[Message]) -> str:
        """Appends `message` to the stored conversation `base`; `messages` is base's content and
        is extended in place."""
        node = {"parent": base, "message": message.model_dump(mode="json", exclude_none=True)}
        head = await self._store.put(json.dumps(node, separators=(",", ":")).encode())
        messages.append(message)
        self._remember(head, tuple(messages))
        return head

    async def load(self, head: str) -> tuple[Message, ...]:
        chain: list[Message] = []
        ref: str | None = head
        prefix: tuple[Message, ...] = ()
        while ref is not None:
            cached = self._cache.get(ref)
            if cached is not None:
                prefix = cached
                break
            node = json.loads(await self._store.get(ref))
            chain.append(Message.model_validate(node["message"]))
            ref = node["parent"]
        messages = prefix + tuple(reversed(chain))
        self._remember(head, messages)
        return messages

    async def put_context(self, context: CallContext) -> str:
        return await self._store.put(context.model_dump_json().encode())

    async def get_context(self, ref: str) -> CallContext:
        return CallContext.model_validate_json(await self._store.get(ref))

    async def _materialize(self, draft: MessageDraft) -> Message:
        blocks: list[ContentBlock] = []
        for block in draft.content:
            if isinstance(block, BlockRef):
                blocks.append(_BLOCK.validate_json(await self._store.get(block.ref)))
            else:
                blocks.append(block)
        return Message(role=draft.role, content=blocks)

    def _remember(self, head: str, messages: tuple[Message, ...]) -> None:
        self._cache[head] = messages
        self._cache.move_to_end(head)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
