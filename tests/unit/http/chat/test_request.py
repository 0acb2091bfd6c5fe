"""What a chat request asks (turnkeeper/http/chat/request.py): the last user message's text, or
the approvals its last assistant message answers; any other last message is refused, saying
why."""

from __future__ import annotations

from typing import Any

import pytest

from turnkeeper.http.chat.chunks import approval_id
from turnkeeper.http.chat.request import (
    Answer,
    ChatBody,
    UiMessage,
    UserText,
    asked,
    told_approvals,
)
from turnkeeper.http.errors import ApiError


def body(*messages: dict[str, Any], trigger: str = "submit-message") -> ChatBody:
    return ChatBody.model_validate({"id": "chat-1", "messages": list(messages), "trigger": trigger})


def user(*texts: str) -> dict[str, Any]:
    return {"id": "m1", "role": "user", "parts": [{"type": "text", "text": t} for t in texts]}


def tool_part(call_id: str, state: str, approval: dict[str, Any] | None) -> dict[str, Any]:
    part = {"type": "tool-write_file", "toolCallId": call_id, "state": state, "input": {}}
    return part | ({"approval": approval} if approval is not None else {})


def assistant(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"id": "turn-1", "role": "assistant", "parts": list(parts)}


def refusal(chat: ChatBody) -> str:
    with pytest.raises(ApiError) as raised:
        asked(chat)
    assert raised.value.status == 422
    return raised.value.message


def test_the_last_user_message_s_text_parts_are_the_turn_s_input() -> None:
    earlier = assistant({"type": "text", "text": "Hi."})
    assert asked(body(user("old"), earlier, user("Write", "it down."))) == UserText(
        "Write\nit down."
    )


def test_answered_approvals_of_the_last_assistant_message_are_decisions() -> None:
    approval = {"id": approval_id(7, "c1"), "approved": False, "reason": "no"}
    waiting = {"id": approval_id(7, "c2")}
    last = assistant(
        {"type": "step-start"},
        tool_part("c1", "approval-responded", approval),
        tool_part("c2", "approval-requested", waiting),
        tool_part("c0", "output-available", {"id": approval_id(3, "c0"), "approved": True}),
    )
    assert asked(body(user("go"), last)) == [
        Answer(call_id="c1", offset=7, approved=False, reason="no")
    ]
    assert told_approvals(UiMessage.model_validate(last)) == {
        "c1": approval_id(7, "c1"),
        "c2": approval_id(7, "c2"),
    }


def test_an_approval_id_not_of_this_server_or_of_another_call_is_refused() -> None:
    foreign = tool_part("c1", "approval-responded", {"id": "aitxt-1", "approved": True})
    assert "not an approval this server asked for" in refusal(body(assistant(foreign)))
    swapped = {"id": approval_id(7, "c2"), "approved": True}
    assert "call 'c1'" in refusal(body(assistant(tool_part("c1", "approval-responded", swapped))))


@pytest.mark.parametrize(
    ("messages", "words"),
    [
        ([assistant({"type": "text", "text": "Hi."})], "answers no approval"),
        ([{"id": "s", "role": "system", "parts": [{"type": "text", "text": "x"}]}], "system"),
        ([user("  ")], "no text"),
        (
            [
                {
                    "id": "m",
                    "role": "user",
                    "parts": [{"type": "file", "url": "data:,x", "mediaType": "text/plain"}],
                }
            ],
            "'file' part",
        ),
        ([{"id": "m", "role": "user", "parts": [{"type": "text", "text": 3}]}], "not a string"),
    ],
)
def test_a_last_message_that_asks_nothing_the_protocol_allows_is_refused(
    messages: list[dict[str, Any]], words: str
) -> None:
    assert words in refusal(body(*messages))


def test_regenerating_an_answer_is_refused_saying_what_to_do() -> None:
    assert "send the question again" in refusal(body(user("again"), trigger="regenerate-message"))
