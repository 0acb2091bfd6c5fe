"""`turnkeeper chat` with scripted stdin: a session of turns at the prompt, the streamed answer,
an approval decided at the prompt, and the session left open or closed."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import WorkflowExecutionStatus
from typer.testing import Result

from tests.conftest import TurnRunner, new_key, scripted_request
from tests.fakes import fake_anthropic as fake
from tests.support.console_runs import address_of, restore_logging, runner  # noqa: F401 (autouse fixture)
from tests.workflows.test_sessions import _settled, _turn_input
from turnkeeper.client.sessions import session as session_handle
from turnkeeper.client.sessions import start_session
from turnkeeper.console.cli import app


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
    # Any lower-case provider name may be a named endpoint of the worker: this one cannot.
    path.write_text(json.dumps({"id": "a", "model": "Nope!:x"}))
    result = await chat(turns, "", "--agent", str(path))
    assert result.exit_code == 2
    assert "unknown provider 'Nope!'" in result.output


def pausing_agent_file(tmp_path: Path, key: str) -> Path:
    """An agent whose calls cost $0.5 each, in a session of $0.4 that pauses when it is spent."""
    agent = scripted_request(key, agent={"price": PRICEY})["agent"]
    path = tmp_path / "agent.json"
    constraints = {"cost_budget_usd": 0.4, "on_budget_exhausted": "pause"}
    path.write_text(json.dumps({**agent, "constraints": constraints}))
    return path


PRICEY = {"input_per_mtok": 10_000.0, "output_per_mtok": 100_000.0}
USAGE = {"input_tokens": 20, "output_tokens": 3}  # $0.2 in, $0.3 out


async def test_a_spent_budget_is_extended_at_the_prompt(turns: TurnRunner, tmp_path: Path) -> None:
    key = new_key()
    turns.fake.script(
        key,
        [
            fake.tool_calls(("list_files", {"path": "."}), usage=USAGE),
            fake.text("Listed them.", usage=USAGE),
            fake.text("Still here.", usage=USAGE),
        ],
    )
    session_id = f"chat-{key}"
    # A word and a negative amount are refused at the prompt; then $1 is granted.
    stdin = "List the files\nlots\n-1\n1\nAnd now?\n/close\n"
    result = await chat(
        turns, stdin, "--agent", str(pausing_agent_file(tmp_path, key)), "--session", session_id
    )

    output = result.output
    assert result.exit_code == 0, output
    assert "the turn's cost budget is spent (request 1)" in output
    assert f"turnkeeper extend {session_id}/turn-1" in output
    assert "'lots' is not a number of USD" in output
    assert "'-1': the amount must be positive" in output
    assert "agent> Listed them." in output
    # The $1 granted to the turn extends the session's budget too, so the next message is taken.
    assert "agent> Still here." in output
    assert "Session closed after 2 turns" in output
    report = await turns.client.get_workflow_handle(f"{session_id}/turn-1").result()
    [extension] = report["budget_extensions"]
    assert (extension["cost_usd"], extension["reason"]) == (1.0, "extended in turnkeeper chat")
    status = await session_handle(turns.client, session_id).status()
    assert status.cost_extended_usd == 1.0
    second = await _turn_input(turns, f"{session_id}/turn-2")
    # What is left of $0.4 + $1 after the first turn's $1.
    assert second["task"]["constraints"]["cost_budget_usd"] == pytest.approx(0.4)
    assert status.cost_usd == pytest.approx(1.5)
    assert status.cost_left_usd() == 0.0


async def test_no_extension_at_the_prompt_cancels_the_turn(
    turns: TurnRunner, tmp_path: Path
) -> None:
    key = new_key()
    turns.fake.script(key, [fake.tool_calls(("list_files", {"path": "."}), usage=USAGE)])
    session_id = f"chat-{key}"
    result = await chat(
        turns,
        "List the files\n\n/quit\n",
        "--agent",
        str(pausing_agent_file(tmp_path, key)),
        "--session",
        session_id,
    )

    output = result.output
    assert result.exit_code == 0, output
    assert "Not extended: the turn is cancelled" in output
    assert "turn failed (TurnCancelled)" in output
    status = await _settled(session_handle(turns.client, session_id))
    assert [t.outcome for t in status.recent_turns] == ["cancelled"]
    assert status.messages == 0


async def test_a_chat_back_in_a_session_follows_its_waiting_turn(
    turns: TurnRunner, tmp_path: Path
) -> None:
    key = new_key()
    turns.fake.script(
        key,
        [
            fake.tool_calls(("list_files", {"path": "."}), usage=USAGE),
            fake.text("Listed them.", usage=USAGE),
        ],
    )
    session_id = f"chat-{key}"
    agent = json.loads(pausing_agent_file(tmp_path, key).read_text())
    constraints = agent.pop("constraints")
    session = await start_session(
        turns.client,
        session_id=session_id,
        agent=agent,
        constraints=constraints,
        task_queue=turns.task_queue,
    )
    await session.send("List the files")  # sent elsewhere; it pauses on its budget

    result = await chat(turns, "1\n/quit\n", "--session", session_id)

    output = result.output
    assert result.exit_code == 0, output
    assert f"Turn {session_id}/turn-1 is still running; following it." in output
    assert "the turn's cost budget is spent (request 1)" in output
    assert "agent> Listed them." in output
