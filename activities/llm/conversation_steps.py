"""The conversation side of a model call: the whole conversation from the reference and the few
new messages the workflow sent, and the answer stored after it."""

from __future__ import annotations

from temporalio.exceptions import ApplicationError
from turnkeeper.activities.llm.provider import ModelResponse
from turnkeeper.activities.store.content_store import ContentMissingError
from turnkeeper.activities.store.conversation_store import Conversation, ConversationStore
from turnkeeper.contracts.activity_io import CallContext, ModelCallInput
from turnkeeper.contracts.errors import CONTENT_MISSING
from turnkeeper.contracts.messages import Message


async def resolve_conversation(
    conversations: ConversationStore, call: ModelCallInput
) -> tuple[Conversation, CallContext]:
    """The call's conversation, its new messages stored, and the turn's context (its root, or
    for a chain older than context roots the object `call.context_ref` names).

    Raises:
        ApplicationError: ContentMissing, not retried: the store lost part of the conversation;
            the workflow re-sends it inline.
    """
    try:
        conversation = await conversations.resolve(call.conversation, call.context)
        context = conversation.context or await _legacy_context(conversations, call)
    except ContentMissingError as err:
        raise ApplicationError(str(err), type=CONTENT_MISSING, non_retryable=True) from err
    return conversation, context


async def _legacy_context(conversations: ConversationStore, call: ModelCallInput) -> CallContext:
    if call.context_ref is None:
        return CallContext()
    return await conversations.get_context(call.context_ref)


async def store_answer(
    conversations: ConversationStore, conversation: Conversation, response: ModelResponse
) -> tuple[Message, str]:
    """The provider's answer as the assistant message, appended to the stored conversation (in
    place), and the reference of the conversation that ends with it."""
    assistant = Message(role="assistant", content=response.content)
    return assistant, await conversations.append(conversation, assistant)
