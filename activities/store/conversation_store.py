"""The conversation as a chain of content-addressed nodes: a root `{context}` (system prompt and
the request's tool definitions), then one `{parent, message}` node per message.

A model call receives only the reference of the stored conversation plus the few messages that
are new since the last call; appending is O(new content), and every node is immutable, so a
retried or replayed call that appends the same message gets the same reference back. The root
holds what stays the same across the turn's calls, so one reference names all a call needs.
Chains written before the root held the context start at their first message; their context
is a separate object the workflow names by `context_ref`.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import dataclass, field

from pydantic import TypeAdapter
from turnkeeper.contracts.activity_io import BlockRef, CallContext, ConversationDelta, MessageDraft
from turnkeeper.contracts.messages import ContentBlock, Message

from turnkeeper.payloads.content_store import ContentStore

_BLOCK = TypeAdapter(ContentBlock)


@dataclass
class Conversation:
    """A stored conversation: `head` names it (None: nothing stored yet)."""

    head: str | None = None
    context: CallContext | None = None
    messages: list[Message] = field(default_factory=list)


class ConversationStore:
    def __init__(self, store: ContentStore, *, cache_size: int = 512) -> None:
        self._store = store
        self._cache: OrderedDict[str, tuple[CallContext | None, tuple[Message, ...]]] = (
            OrderedDict()
        )
        self._cache_size = cache_size

    @property
    def store(self) -> ContentStore:
        """The content store the conversations are kept in."""
        return self._store

    async def resolve(
        self, delta: ConversationDelta, context: CallContext | None = None
    ) -> Conversation:
        """Stores the delta's new messages and returns the whole conversation. With `context`,
        a new chain is started from it (the delta then has no base)."""
        if context is not None:
            conversation = Conversation(context=context)
            conversation.head = await self._put({"context": context.model_dump(mode="json")})
            self._remember(conversation)
        elif delta.base:
            conversation = await self.load(delta.base)
        else:
            conversation = Conversation()
        for draft in delta.append:
            await self.append(conversation, await self._materialize(draft))
        return conversation

    async def append(self, conversation: Conversation, message: Message) -> str:
        """Appends `message` to the stored conversation, in place; returns the new head."""
        node = {
            "parent": conversation.head,
            "message": message.model_dump(mode="json", exclude_none=True),
        }
        conversation.head = await self._put(node)
        conversation.messages.append(message)
        self._remember(conversation)
        return conversation.head

    async def load(self, head: str) -> Conversation:
        chain: list[Message] = []
        ref: str | None = head
        context: CallContext | None = None
        prefix: tuple[Message, ...] = ()
        while ref is not None:
            cached = self._cache.get(ref)
            if cached is not None:
                context, prefix = cached
                break
            node = json.loads(await self._store.get(ref))
            if "context" in node:
                context = CallContext.model_validate(node["context"])
                break
            chain.append(Message.model_validate(node["message"]))
            ref = node["parent"]
        conversation = Conversation(head, context, [*prefix, *reversed(chain)])
        self._remember(conversation)
        return conversation

    async def get_context(self, ref: str) -> CallContext:
        """The context of a turn whose chain predates context roots."""
        return CallContext.model_validate_json(await self._store.get(ref))

    async def _put(self, node: dict[str, object]) -> str:
        return await self._store.put(json.dumps(node, separators=(",", ":")).encode())

    async def _materialize(self, draft: MessageDraft) -> Message:
        blocks: list[ContentBlock] = []
        for block in draft.content:
            if isinstance(block, BlockRef):
                blocks.append(_BLOCK.validate_json(await self._store.get(block.ref)))
            else:
                blocks.append(block)
        return Message(role=draft.role, content=blocks)

    def _remember(self, conversation: Conversation) -> None:
        assert conversation.head is not None
        self._cache[conversation.head] = (conversation.context, tuple(conversation.messages))
        self._cache.move_to_end(conversation.head)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
