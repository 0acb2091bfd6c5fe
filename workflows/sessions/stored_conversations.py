"""The activities that read and write a stored conversation without a model call, as the
workflows call them: one place for their options; each caller names what a failure means."""

from __future__ import annotations

from typing import TypeVar

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts.names import ACTIVITY_LOAD_CONVERSATION, ACTIVITY_STORE_CONVERSATION
    from turnkeeper.contracts.session import (
        LoadConversationInput,
        LoadedConversation,
        StoreConversationInput,
        StoredConversation,
    )
    from turnkeeper.workflows.activity_calls import OnFailure, execute
    from turnkeeper.workflows.activity_options import (
        LOAD_CONVERSATION_RETRY,
        LOAD_CONVERSATION_TIMEOUT,
    )

D = TypeVar("D")


async def load_conversation(
    ref: str, summary: str, on_failure: OnFailure[D]
) -> LoadedConversation | D:
    """The messages of the stored conversation `ref` (claim-checked: history keeps a reference);
    `on_failure` says what a store that failed or has lost it (a `ContentMissing` cause) means."""
    return await execute(
        ACTIVITY_LOAD_CONVERSATION,
        LoadConversationInput(conversation_ref=ref),
        on_failure,
        result_type=LoadedConversation,
        options=workflow.ActivityConfig(
            start_to_close_timeout=LOAD_CONVERSATION_TIMEOUT,
            retry_policy=LOAD_CONVERSATION_RETRY,
            summary=summary,
        ),
    )


async def store_conversation(
    store: StoreConversationInput, summary: str, on_failure: OnFailure[D]
) -> StoredConversation | D:
    """Stores `store`'s messages on its base (or on a new chain from its context);
    `on_failure` says what a store that failed or has lost the base means."""
    return await execute(
        ACTIVITY_STORE_CONVERSATION,
        store,
        on_failure,
        result_type=StoredConversation,
        options=workflow.ActivityConfig(
            start_to_close_timeout=LOAD_CONVERSATION_TIMEOUT,
            retry_policy=LOAD_CONVERSATION_RETRY,
            summary=summary,
        ),
    )
