"""The activity a session uses to read its conversation back after continue-as-new: the next run
carries only the conversation's reference, and its `messages` query needs the messages."""

from __future__ import annotations

from temporalio import activity
from temporalio.exceptions import ApplicationError
from turnkeeper.activities.store.content_store import ContentMissingError
from turnkeeper.activities.store.conversation_store import ConversationStore
from turnkeeper.contracts.errors import CONTENT_MISSING
from turnkeeper.contracts.names import ACTIVITY_LOAD_CONVERSATION
from turnkeeper.contracts.session import LoadConversationInput, LoadedConversation


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
