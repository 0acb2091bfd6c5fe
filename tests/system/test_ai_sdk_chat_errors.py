"""What the AI SDK chat endpoint refuses (docs/ai-sdk.md), each with a clear protocol error and
nothing started or decided: a body that is not the transport's, a last message that asks for
nothing a turn can do, an unknown agent, someone else's chat (the words of a missing one), and
approval answers for a call that does not wait, that the caller may not decide, or that are not
the caller's at all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from temporalio.client import Client

import turnkeeper
from tests.conftest import new_key
from tests.system.ai_sdk_chat import chat_body, post_chat, user_message
from tests.system.conftest import SystemStack
from tests.system.driving import connect_like
from tests.system.mcp_serving import Served, approval_agent, serving_agents

ASSISTANT_TEXT = {"id": "a1", "role": "assistant", "parts": [{"type": "text", "text": "Hi."}]}
FILE_PART = {"type": "file", "url": "data:text/plain,x", "mediaType": "text/plain"}


def answered(asked: dict[str, Any], approved: bool, **changes: Any) -> dict[str, Any]:
    """The assistant message as the SDK's chat sends it back once `asked`'s approval is
    answered (`changes`: fields of the tool part to send otherwise)."""
    part = {
        "type": "tool-write_file",
        "toolCallId": asked["toolCallId"],
        "state": "approval-responded",
        "input": {"path": "out.md", "content": "hi"},
        "approval": {"id": asked["approvalId"], "approved": approved},
    } | changes
    return {"id": "m2", "role": "assistant", "parts": [{"type": "step-start"}, part]}


async def pending(client: Client, turn_id: str) -> list[str]:
    """The call ids waiting in the turn (its status query)."""
    return [call.call_id for call in (await turnkeeper.turn(client, turn_id).status()).pending]


async def reconnect_status(served: Served, name: str, agent_id: str, chat_id: str) -> int:
    headers = {"Authorization": f"Bearer {served.tokens[name]}"}
    async with httpx.AsyncClient(base_url=served.url, headers=headers, timeout=30) as http:
        return (await http.get(f"/v1/agents/{agent_id}/chat/{chat_id}/stream")).status_code


async def test_a_request_that_does_not_fit_the_protocol_starts_nothing(
    stack: SystemStack, tmp_path: Path
) -> None:
    key = new_key()
    folder = tmp_path / "agents"
    approval_agent(stack, folder, key, "writer")
    ada, chat = f"ada-{key}", f"chat-{key}"
    hello = user_message("Hello.")
    bodies = {
        "no messages": chat_body(chat),
        "no trigger": {"id": chat, "messages": [hello]},
        "not a message": chat_body(chat, {"role": "user", "content": "Hello."}),
        "assistant text": chat_body(chat, hello, ASSISTANT_TEXT),
        "a file": chat_body(chat, {**hello, "parts": [FILE_PART]}),
        "regenerate": chat_body(chat, hello) | {"trigger": "regenerate-message"},
    }
    async with serving_agents(stack, folder, (ada,)) as served:
        refused = {what: await post_chat(served, ada, "writer", b) for what, b in bodies.items()}
        unknown = await post_chat(served, ada, "nobody", chat_body(chat, hello))
        after = await reconnect_status(served, ada, "writer", chat)

    for what, (status, _, [answer]) in refused.items():
        assert status == 422, (what, answer)
    details = {what: str(answer["detail"]) for what, (_, _, [answer]) in refused.items()}
    assert "messages" in details["no messages"] and "trigger" in details["no trigger"]
    assert "answers no approval" in details["assistant text"]
    assert "'file' part" in details["a file"]
    assert "send the question again" in details["regenerate"]
    assert unknown[0] == 404 and unknown[2][0]["detail"] == "no agent 'nobody' (served: writer)"
    assert after == 404, "no conversation was started"
    assert stack.fake.requests_for(key) == []


def first_asked(chunks: list[Any]) -> dict[str, Any]:
    return next(c for c in chunks if c != "[DONE]" and c["type"] == "tool-approval-request")


async def test_answers_for_a_call_that_does_not_wait_decide_nothing(
    stack: SystemStack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = new_key()
    folder = tmp_path / "agents"
    approval_agent(stack, folder, key, "writer")
    ada, chat = f"ada-{key}", f"chat-{key}"
    hello = user_message("Write the note.")
    async with serving_agents(stack, folder, (ada,)) as served:
        _, _, first = await post_chat(served, ada, "writer", chat_body(chat, hello))
        asked, turn_id = first_asked(first), first[0]["messageId"]
        forged = answered(asked, True, toolCallId="toolu_forged")
        forged["parts"][1]["approval"]["id"] = asked["approvalId"].replace(
            asked["toolCallId"], "toolu_forged"
        )
        not_waiting = await post_chat(served, ada, "writer", chat_body(chat, hello, forged))
        swapped = answered(asked, True, toolCallId="toolu_forged")
        mismatched = await post_chat(served, ada, "writer", chat_body(chat, hello, swapped))
        while_waiting = await post_chat(served, ada, "writer", chat_body(chat, user_message("Hi")))
        client = await connect_like(served.worker, monkeypatch)
        still = await pending(client, turn_id)

    assert not_waiting[0] == 404
    assert "no call 'toolu_forged' waits" in not_waiting[2][0]["detail"]
    assert mismatched[0] == 422 and "not an approval this server asked for" in str(mismatched[2])
    assert while_waiting[0] == 409
    assert still == [asked["toolCallId"]], "nothing was decided"
    assert len(stack.fake.requests_for(key)) == 1, "no second turn started"


async def test_answers_that_are_not_the_caller_s_to_give_decide_nothing(
    stack: SystemStack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key, carol_key = new_key(), new_key()
    folder = tmp_path / "agents"
    approval_agent(stack, folder, key, "writer")
    ada, bob, carol = f"ada-{key}", f"bob-{key}", f"carol-{key}"
    approval_agent(stack, folder, carol_key, "guarded", approvers=[carol])
    chat, guarded_chat = f"chat-{key}", f"guarded-{key}"
    hello = user_message("Write the note.")
    async with serving_agents(stack, folder, (ada,), (bob,)) as served:
        _, _, first = await post_chat(served, ada, "writer", chat_body(chat, hello))
        asked = first_asked(first)
        # Bob, on Ada's chat: no such chat for him, in the words of one that does not exist.
        by_bob = chat_body(chat, hello, answered(asked, True))
        as_bob = await post_chat(served, bob, "writer", by_bob)
        missing = await post_chat(served, bob, "writer", by_bob | {"id": "nothing-here"})
        bob_reconnects = await reconnect_status(served, bob, "writer", chat)
        # An agent whose approver is Carol: Ada owns the chat, but her answer is no decision.
        _, _, guarded = await post_chat(served, ada, "guarded", chat_body(guarded_chat, hello))
        guarded_asked = first_asked(guarded)
        not_approver = await post_chat(
            served, ada, "guarded", chat_body(guarded_chat, hello, answered(guarded_asked, True))
        )
        client = await connect_like(served.worker, monkeypatch)
        still = await pending(client, first[0]["messageId"])
        guarded_still = await pending(client, guarded[0]["messageId"])

    assert as_bob[0] == missing[0] == 404
    words = str(as_bob[2][0]["detail"]).replace(chat, "ID")
    assert words == str(missing[2][0]["detail"]).replace("nothing-here", "ID")
    assert bob_reconnects == 404
    assert still == [asked["toolCallId"]], "nothing was decided"
    assert not_approver[0] == 403 and "not an approver" in not_approver[2][0]["detail"]
    assert guarded_still == [guarded_asked["toolCallId"]], "nothing was decided"
