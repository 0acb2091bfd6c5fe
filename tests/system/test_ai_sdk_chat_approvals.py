"""Approvals and reconnects through the AI SDK's chat (docs/ai-sdk.md): a call that needs
approval reaches the `ai` package's chat as its tool-approval request, and its answer, sent by
the chat in its next request, is the token identity's decision; a reconnect, as a reloaded page
makes it, resumes the turn in flight from another `turnkeeper serve` process (nothing of a chat
is kept in a server's memory)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import turnkeeper
from tests.conftest import new_key
from tests.fakes import fake_anthropic as fake
from tests.system.ai_sdk_chat import chat_client, text_of
from tests.system.conftest import SystemStack
from tests.system.driving import agent, connect_like
from tests.system.mcp_serving import approval_agent, serving_agents, write_agent
from tests.system.serving import serving


def tool_parts(message: dict[str, Any]) -> list[dict[str, Any]]:
    return [part for part in message["parts"] if part["type"].startswith("tool-")]


@pytest.mark.parametrize("approved", [True, False])
async def test_an_approval_is_asked_in_the_chat_and_its_answer_decides_the_call(
    stack: SystemStack, tmp_path: Path, approved: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = new_key()
    folder = tmp_path / "agents"
    approval_agent(stack, folder, key, "writer")
    ada, chat = f"ada-{key}", f"chat-{key}"
    answer = {"answer": approved, "reason": "fine" if approved else "not today"}
    async with serving_agents(stack, folder, (ada,)) as served:
        asked, answered = await chat_client(
            served, ada, "writer", chat, [{"send": "Write the note."}, answer]
        )
        client = await connect_like(served.worker, monkeypatch)
        report = await turnkeeper.turn(client, f"conversation:writer:{chat}/turn-1").result()

    [waiting] = tool_parts(asked["messages"][-1])
    assert waiting["type"] == "tool-write_file" and waiting["state"] == "approval-requested"
    assert waiting["input"] == {"path": "out.md", "content": "hi"}
    assert asked["messages"][-1]["metadata"]["awaiting_approval"] is True
    assert answered["status"] == "ready" and answered["error"] is None, answered
    message = answered["messages"][-1]
    assert [m["role"] for m in answered["messages"]] == ["user", "assistant"]
    [call] = tool_parts(message)
    assert call["state"] == ("output-available" if approved else "output-denied")
    assert call["approval"]["approved"] is approved
    assert text_of(message) == "Done."
    assert message["metadata"]["outcome"] == "completed"
    [decision] = report.decisions
    assert (decision.approver, decision.approved, decision.reason) == (
        ada,
        approved,
        answer["reason"],
    )
    if approved:
        assert "out.md" in call["output"], "the tool's result, as the model read it"
    else:
        assert "not today" in str(stack.fake.requests_for(key)[-1]), "the model was told why"


async def test_a_reloaded_chat_resumes_the_turn_from_another_server(
    stack: SystemStack, tmp_path: Path
) -> None:
    key, slow_key = new_key(), new_key()
    folder = tmp_path / "agents"
    approval_agent(stack, folder, key, "writer")
    write_agent(folder, slow_key, "lister", tools=["list_files"])
    stack.fake.script(
        slow_key,
        [
            fake.tool_calls(("list_files", {"path": "."}), text="Looking."),
            fake.slow(fake.text("Nothing there."), 8),
        ],
    )
    ada, chat, slow_chat = f"ada-{key}", f"chat-{key}", f"chat-{slow_key}"
    async with (
        serving_agents(stack, folder, (ada,)) as served,
        serving(stack, served.worker, "--agents", str(folder), log_name="serve-2.log") as other,
    ):
        [asked] = await chat_client(served, ada, "writer", chat, [{"send": "Write it."}])
        user = asked["messages"][:1]
        # A page reloaded while the turn waits: it holds the user's message only.
        resumed, answered, idle = await chat_client(
            served, ada, "writer", chat,
            [{"reconnect": True}, {"answer": True}, {"reconnect": True}],
            messages=user, url=other,
        )  # fmt: skip
        # A page reloaded while the model still writes: the turn's stream from its start.
        [stopped] = await chat_client(
            served, ada, "lister", slow_chat, [{"stop_after_text": "What is there?"}]
        )
        [caught_up] = await chat_client(
            served, ada, "lister", slow_chat, [{"reconnect": True}],
            messages=stopped["messages"][:1], url=other,
        )  # fmt: skip

    assert resumed["reconnected"] is True and resumed["error"] is None, resumed
    assert resumed["messages"][-1] == asked["messages"][-1], "the same message, replayed"
    assert answered["error"] is None and text_of(answered["messages"][-1]) == "Done."
    assert idle["reconnected"] is False, "no turn runs: 204, nothing resumed"
    assert idle["messages"] == user
    assert text_of(stopped["messages"][-1]) == "Looking."
    assert stopped["messages"][-1]["metadata"].get("outcome") is None, "stopped mid-turn"
    message = caught_up["messages"][-1]
    assert caught_up["reconnected"] is True and caught_up["error"] is None, caught_up
    assert message["id"] == stopped["messages"][-1]["id"]
    assert text_of(message) == "Looking.Nothing there."
    [listing] = tool_parts(message)
    assert listing["state"] == "output-available" and isinstance(listing["output"], str)
    assert message["metadata"]["outcome"] == "completed"


async def test_a_sub_agent_s_approval_is_asked_in_the_parent_s_chat(
    stack: SystemStack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lead_key, child_key = new_key(), new_key()
    folder = tmp_path / "agents"
    stack.fake.script(
        lead_key, [fake.tool_calls(("noter", {"task": "Note it."})), fake.text("Noted.")]
    )
    write = fake.tool_calls(("write_file", {"path": "note.md", "content": "hi"}))
    stack.fake.script(child_key, [write, fake.text("Written.")])
    child = agent(child_key, id="noter-agent", tools=["write_file"])
    noter = {"name": "noter", "description": "Writes notes.", "agent": child}
    write_agent(
        folder, lead_key, "lead", subagents=[noter],
        constraints={"require_approval": ["write_file"]},
    )  # fmt: skip
    ada, chat = f"ada-{lead_key}", f"chat-{lead_key}"
    async with serving_agents(stack, folder, (ada,)) as served:
        asked, answered = await chat_client(
            served, ada, "lead", chat, [{"send": "Note it."}, {"answer": True}]
        )
        client = await connect_like(served.worker, monkeypatch)
        report = await turnkeeper.turn(client, f"conversation:lead:{chat}/turn-1").result()

    [waiting] = tool_parts(asked["messages"][-1])
    assert waiting["type"] == "tool-write_file" and waiting["state"] == "approval-requested"
    [subagent] = [p for p in asked["messages"][-1]["parts"] if p["type"] == "data-subagent"]
    assert subagent["data"]["state"] == "running" and subagent["data"]["agent"] == "noter"
    assert subagent["data"]["input"] == {"task": "Note it."}
    message = answered["messages"][-1]
    assert answered["error"] is None and text_of(message) == "Noted.", answered
    [subagent] = [p for p in message["parts"] if p["type"] == "data-subagent"]
    assert subagent["data"]["outcome"] == "completed" and subagent["data"]["state"] == "finished"
    assert "Written." in subagent["data"]["output"]
    [child_turn] = report.subagents
    child_report = await turnkeeper.turn(client, child_turn.workflow_id).result()
    assert [d.approver for d in child_report.decisions] == [ada]
