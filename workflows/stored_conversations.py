"""The activities that read and write a stored conversation without a model call, as the
workflows call them: one place for their options."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts.names import ACTIVITY_LOAD_CONVERSATION, ACTIVITY_STORE_CONVERSATION
    from turnkeeper.contracts.session import (
        LoadConversationInput,
        LoadedConversation,
        StoreConversationInput,
        StoredConversation,
    )
    from turnkeeper.workflows.activity_options import (
        LOAD_CONVERSATION_RETRY,
        LOAD_CONVERSATION_TIMEOUT,
    )


async def load_conversation(ref: str, summary: str) -> LoadedConversation:
    """The messages of the stored conversation `ref` (claim-checked: history keeps a reference).

    Raises:
        ActivityError: The store failed or has lost it (a `ContentMissing` cause).
    """
    return await workflow.execute_activity(
        ACTIVITY_LOAD_CONVERSATION,
        LoadConversationInput(conversation_ref=ref),
        result_type=LoadedConversation,
        start_to_close_timeout=LOAD_CONVERSATION_TIMEOUT,
        retry_policy=LOAD_CONVERSATION_RETRY,
        summary=summary,
    )


async def store_conversation(store: StoreConversationInput, summary: str) -> StoredConversation:
    """Stores `store`'s messages on its base (or on a new chain from its context).

    Raises:
        ActivityError: The store failed or has lost the base.
    """
    return await workflow.execute_activity(
        ACTIVITY_STORE_CONVERSATION,
        store,
        result_type=StoredConversation,
        start_to_close_timeout=LOAD_CONVERSATION_TIMEOUT,
        retry_policy=LOAD_CONVERSATION_RETRY,
        summary=summary,
    )
