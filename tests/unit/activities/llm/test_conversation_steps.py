"""The conversation of a model call: resolved from a reference and the new messages, and the
answer stored after it, over a real content store in a local folder."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.exceptions import ApplicationError
from turnkeeper.activities.llm.model_call_activity import resolve_conversation, store_answer
from turnkeeper.activities.providers.provider import ModelResponse
from turnkeeper.activities.store.conversation_store import ConversationStore
from turnkeeper.contracts.activity_io import CallContext, ConversationDelta
from turnkeeper.contracts.errors import CONTENT_MISSING
from turnkeeper.contracts.messages import Message, TextBlock
from turnkeeper.contracts.turn import Usage

from tests.unit.activities.llm.steps import call, conversations, user
from turnkeeper.payloads.content_store import LocalFolderStore

CONTEXT = CallContext(system_prompt="You are terse.")
ANSWER = ModelResponse(
    content=[TextBlock(text="Hi.")], stop_reason="end_turn", usage=Usage(), model="m"
)


def texts(messages: list[Message]) -> list[str]:
    return [message.text() for message in messages]


async def test_the_first_call_roots_the_conversation_in_the_turn_s_context(tmp_path: Path) -> None:
    conversation, context = await resolve_conversation(
        conversations(tmp_path), call(context=CONTEXT)
    )

    assert context == CONTEXT
    assert texts(conversation.messages) == ["Hello"]
    assert conversation.head is not None


async def test_a_later_call_sends_the_reference_and_only_what_is_new(tmp_path: Path) -> None:
    store = conversations(tmp_path)
    first, _ = await resolve_conversation(store, call(context=CONTEXT))
    _, head = await store_answer(store, first, ANSWER)
    delta = ConversationDelta(base=head, append=[user("And now?")])

    # A fresh store object over the same folder: nothing comes from a cache.
    later, context = await resolve_conversation(conversations(tmp_path), call(conversation=delta))

    assert context == CONTEXT
    assert texts(later.messages) == ["Hello", "Hi.", "And now?"]


async def test_a_chain_older_than_context_roots_reads_its_context_apart(tmp_path: Path) -> None:
    content = LocalFolderStore(tmp_path / "store")
    store = ConversationStore(content)
    context_ref = await content.put(CONTEXT.model_dump_json().encode())

    _, context = await resolve_conversation(store, call(context_ref=context_ref))
    _, no_context = await resolve_conversation(store, call())

    assert context == CONTEXT
    assert no_context == CallContext()


async def test_a_conversation_the_store_lost_fails_the_call_for_the_workflow_to_resend(
    tmp_path: Path,
) -> None:
    lost = ConversationDelta(base="sha256:" + "0" * 64, append=[user("And now?")])

    with pytest.raises(ApplicationError) as failed:
        await resolve_conversation(conversations(tmp_path), call(conversation=lost))

    assert failed.value.type == CONTENT_MISSING
    assert failed.value.non_retryable


async def test_the_answer_is_stored_after_the_conversation_under_one_reference(
    tmp_path: Path,
) -> None:
    store = conversations(tmp_path)
    conversation, _ = await resolve_conversation(store, call(context=CONTEXT))

    assistant, head = await store_answer(store, conversation, ANSWER)
    again, same_head = await store_answer(
        store, (await resolve_conversation(store, call(context=CONTEXT)))[0], ANSWER
    )

    assert assistant == Message(role="assistant", content=ANSWER.content) == again
    # Content-addressed: a retried call that stores the same answer names the same conversation.
    assert same_head == head
    assert texts((await conversations(tmp_path).load(head)).messages) == ["Hello", "Hi."]
