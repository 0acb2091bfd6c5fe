"""A turn continues an earlier conversation by reference: `history_ref` names the stored
conversation an earlier report's `conversation_ref` gave, and the model sees all of it while the
new turn's request, history and report hold only the new exchange."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from tests.conftest import TurnRunner, new_key, scripted_request
from tests.fakes import fake_anthropic as fake
from tests.workflows.test_invalid_requests import assert_invalid
from turnkeeper.payloads.content_store import content_ref


async def test_a_turn_continues_a_report_by_its_conversation_ref(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(
        key,
        [fake.tool_calls(("list_files", {"path": "."})), fake.text("Listed."), fake.text("Yes.")],
    )
    first = await turns.run(scripted_request(key, task={"input": "List the files."}))
    assert first.conversation_ref is not None

    second = await turns.run(
        scripted_request(key, task={"input": "Did you?"}, history_ref=first.conversation_ref)
    )

    sent = turns.fake.requests_for(key)[-1].body["messages"]
    assert len(sent) == len(first.messages) + 1
    assert "List the files." in json.dumps(sent[0]) and "Did you?" in json.dumps(sent[-1])
    assert [m.text() for m in second.messages] == ["Did you?", "Yes."]
    assert second.conversation_ref not in (None, first.conversation_ref)


async def test_history_and_history_ref_together_are_refused(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(key, [fake.text("should never be called")])
    request: dict[str, Any] = scripted_request(
        key, history=[{"role": "user", "content": "hi"}], history_ref=_missing_ref()
    )
    await assert_invalid(turns, request, "give history or history_ref, not both")
    assert turns.fake.requests_for(key) == []


async def test_an_empty_history_ref_is_refused(turns: TurnRunner) -> None:
    await assert_invalid(turns, scripted_request(new_key(), history_ref=""), "history_ref")


async def test_a_history_ref_the_store_does_not_have_fails_typed(turns: TurnRunner) -> None:
    """Never answered without the history it names: re-sending only the turn's own messages
    would let the model answer a conversation it cannot see."""
    key = new_key()
    turns.fake.script(key, [fake.text("should never be called")])
    missing = _missing_ref()
    await assert_invalid(
        turns,
        scripted_request(key, history_ref=missing),
        f"history_ref: the content store no longer has the conversation this turn continues "
        f"({missing})",
    )
    assert turns.fake.requests_for(key) == []


def _missing_ref() -> str:
    return content_ref(hashlib.sha256(new_key().encode()).digest())
