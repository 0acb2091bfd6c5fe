"""The activities that read and write a stored conversation without a model call: a session reads
its conversation back after continue-as-new (the next run carries only the reference, and its
`messages` query needs the messages), a compacting turn that continues a conversation reads the
earlier part to compact it, and a compacted turn stores its whole conversation for the next."""

from __future__ import annotations

from temporalio import activity
from temporalio.exceptions import ApplicationError
from turnkeeper.activities.store.conversation_store import ConversationStore
from turnkeeper.contracts.errors import CONTENT_MISSING
from turnkeeper.contracts.names import ACTIVITY_LOAD_CONVERSATION, ACTIVITY_STORE_CONVERSATION
from turnkeeper.contracts.session import (
    LoadConversationInput,
    LoadedConversation,
    StoreConversationInput,
    StoredConversation,
)

from turnkeeper.payloads.content_store import ContentMissingError


class ConversationActivities:
    def __init__(self, conversations: ConversationStore) -> None:
        self._conversations = conversations

    @activity.defn(name=ACTIVITY_LOAD_CONVERSATION)
    async def load_conversation(self, request: LoadConversationInput) -> LoadedConversation:
        try:
            conversation = await self._conversations.load(request.conversation_ref)
        except ContentMissingError as err:
            raise ApplicationError(str(err), type=CONTENT_MISSING, non_retryable=True) from err
        return LoadedConversation(messages=conversation.messages)

    @activity.defn(name=ACTIVITY_STORE_CONVERSATION)
    async def store_conversation(self, request: StoreConversationInput) -> StoredConversation:
        try:
            conversation = await self._conversations.resolve(request.conversation, request.context)
        except ContentMissingError as err:
            raise ApplicationError(str(err), type=CONTENT_MISSING, non_retryable=True) from err
        if conversation.head is None:
            # A defect of the caller's, never an outage: not retried.
            raise ApplicationError(
                "store_conversation was given neither a base, a context nor a message",
                non_retryable=True,
            )
        return StoredConversation(conversation_ref=conversation.head)
