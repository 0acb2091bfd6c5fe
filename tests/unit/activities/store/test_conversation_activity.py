"""The activity a session uses to read its conversation back after continue-as-new."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment
from turnkeeper.activities.store.conversation_activity import ConversationActivities
from turnkeeper.activities.store.conversation_store import ConversationStore
from turnkeeper.contracts.activity_io import CallContext, ConversationDelta
from turnkeeper.contracts.messages import Message
from turnkeeper.contracts.session import LoadConversationInput

from turnkeeper.payloads.content_store import LocalFolderStore


async def test_it_reads_a_stored_conversation_without_its_context(tmp_path: Path) -> None:
    conversations = ConversationStore(LocalFolderStore(tmp_path))
    conversation = await conversations.resolve(
        ConversationDelta(), CallContext(system_prompt="Be.")
    )
    for role, text in [("user", "Hi"), ("assistant", "Hello"), ("user", "Bye")]:
        await conversations.append(conversation, Message(role=role, content=text))
    assert conversation.head is not None
    # A fresh store object: nothing from the cache of the one that wrote it.
    activities = ConversationActivities(ConversationStore(LocalFolderStore(tmp_path)))

    loaded = await ActivityEnvironment().run(
        activities.load_conversation, LoadConversationInput(conversation_ref=conversation.head)
    )

    assert [(m.role, m.text()) for m in loaded.messages] == [
        ("user", "Hi"),
        ("assistant", "Hello"),
        ("user", "Bye"),
    ]


async def test_a_conversation_the_store_lost_is_a_typed_non_retryable_error(
    tmp_path: Path,
) -> None:
    activities = ConversationActivities(ConversationStore(LocalFolderStore(tmp_path)))
    missing = "sha256:" + "A" * 43
    with pytest.raises(ApplicationError) as error:
        await ActivityEnvironment().run(
            activities.load_conversation, LoadConversationInput(conversation_ref=missing)
        )
    assert (error.value.type, error.value.non_retryable) == ("ContentMissing", True)
