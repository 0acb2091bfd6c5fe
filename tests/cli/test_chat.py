"""`turnkeeper chat` with scripted stdin: a session of turns at the prompt, the streamed answer,
an approval decided at the prompt, and the session left open or closed."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from temporalio.client import WorkflowExecutionStatus
from typer.testing import Result

from tests.cli.helpers import address_of, restore_logging, runner  # noqa: F401 (autouse fixture)
from tests.conftest import TurnRunner, new_key, scripted_request
from tests.fakes import fake_anthropic as fake
from turnkeeper.cli import app
from turnkeeper.sessions import session as session_handle


async def chat(turns: TurnRunner, stdin: str, *flags: str) -> Result:
    arguments = ["chat", *flags, *address_of(turns.client), "--task-queue", turns.task_queue]
    return await asyncio.to_thread(runner.invoke, app, arguments, input=stdin)


def agent_file(tmp_path: Path, key: str, **overrides: Any) -> Path:
    agent = scripted_request(key, agent=overrides)["agent"]
    path = tmp_path / "agent.json"
    path.write_text(json.dumps({**agent, "constraints": {"cost_budget_usd": 1}}))
    return path


async def test_a_chat_of_two_turns_with_an_approval_at_the_prompt(
    turns: TurnRunner, tmp_path: Path
) -> None:
    key = new_key()
    turns.fake.script(
        key,
        [
            fake.tool_calls(("write_file", {"path": "note.md", "content": "blue"})),
            fake.text("Saved your note."),
            fake.text("Your note says blue."),
        ],
    )
    session_id = f"chat-{key}"
    stdin = "Save a note saying blue\ny\nWhat does my note say?\n/close\n"
    result = await chat(
        turns, stdin, "--agent", str(agent_file(tmp_path, key)), "--session", session_id
    )

    output = result.output
    assert result.exit_code == 0, output
    assert f"Session {session_id}" in output
    assert "write_file waits for your approval" in output
    assert "agent> Saved your note." in output
    assert "agent> Your note says blue." in output
    assert "Session closed after 2 turns" in output
    assert (turns.workspace / "note.md").read_text() == "blue"
    described = await turns.client.get_workflow_handle(session_id).describe()
    assert described.status == WorkflowExecutionStatus.COMPLETED
    # The second turn saw the first exchange.
    second_request = turns.fake.requests_for(key)[-1].body["messages"]
    assert "Save a note saying blue" in json.dumps(second_request[0])


async def test_a_chat_streams_and_leaves_the_session_open_for_later(
    turns: TurnRunner, tmp_path: Path
) -> None:
    key = new_key()
    turns.fake.script(key, [fake.text("First answer."), fake.text("Second answer.")])
    session_id = f"chat-{key}"
    path = agent_file(tmp_path, key, stream=True)

    first = await chat(turns, "Hello\n", "--agent", str(path), "--session", session_id)
    assert first.exit_code == 0, first.output
    assert "agent> First answer." in first.output
    assert all(request.body.get("stream") for request in turns.fake.requests_for(key))
    assert f"The session stays open: turnkeeper chat --session {session_id}" in first.output

    # Back later, without the agent file: the session knows its agent.
    second = await chat(turns, "Again\n/quit\n", "--session", session_id)
    assert second.exit_code == 0, second.output
    assert "1 turns so far" in second.output
    assert "agent> Second answer." in second.output
    messages = await session_handle(turns.client, session_id).messages()
    assert [m.text() for m in messages] == ["Hello", "First answer.", "Again", "Second answer."]


async def test_a_new_chat_without_an_agent_is_refused(turns: TurnRunner) -> None:
    result = await chat(turns, "", "--session", f"chat-{new_key()}")
    assert result.exit_code == 2
    assert "A new session needs its agent: --agent FILE." in result.output


async def test_a_chat_refuses_an_agent_file_that_does_not_validate(
    turns: TurnRunner, tmp_path: Path
) -> None:
    path = tmp_path / "agent.json"
    path.write_text(json.dumps({"id": "a", "model": "nope:x"}))
    result = await chat(turns, "", "--agent", str(path))
    assert result.exit_code == 2
    assert "unknown provider 'nope'" in result.output
