"""Conversations and compaction in `python worker.py`: a session driven with the `temporal` CLI
exactly as the README prints it, `turnkeeper chat` fed on stdin, a turn that outgrows
`agent.compaction.max_input_tokens` (followed through the public client's event stream) and a
session whose conversation does, through `turnkeeper.start_session`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import turnkeeper
from tests.conftest import new_key
from tests.fakes import fake_anthropic as fake
from tests.support.waiting import until
from tests.system.conftest import SystemStack, WorkerProcess
from tests.system.steps import (
    HALF_A_DOLLAR,
    LIST,
    PRICEY,
    connect_as_user,
    refused_update,
    result,
    turn_request,
    turnkeeper_with_input,
    update,
    wait_for_state,
    write,
)
from tests.workflows.test_compaction import CHAPTER, reader
from tests.workflows.test_session_compaction import session_reader

READS = 4


async def start_session(stack: SystemStack, worker: WorkerProcess, key: str) -> str:
    session_id = f"chat-{key}"
    session = {
        "agent": turn_request(key)["agent"],
        "session_id": session_id,
        "constraints": {"cost_budget_usd": 2},
    }
    await stack.temporal(
        "workflow", "start", "--type", "AgentSessionWorkflow", "--task-queue", worker.task_queue,
        "--workflow-id", session_id, "--input", json.dumps(session),
    )  # fmt: skip
    return session_id


async def query(stack: SystemStack, workflow_id: str, name: str) -> Any:
    answer = await stack.temporal("workflow", "query", "--workflow-id", workflow_id, "--name", name)
    return answer["queryResult"][0]


async def send_when_idle(stack: SystemStack, session_id: str, text: str) -> str:
    """`send`, once the session has recorded the end of its last turn: until then the README's
    `temporal` caller is refused and sends again."""

    async def session_state() -> str:
        return (await query(stack, session_id, "status"))["state"]

    await until(session_state, lambda state: state == "idle", f"{session_id} idle")
    sent = await update(stack, session_id, "send", {"input": text})
    return sent["turn_workflow_id"]


async def test_a_session_through_the_temporal_cli_one_turn_at_a_time(stack: SystemStack) -> None:
    worker = await stack.start_worker()
    key = new_key()
    stack.fake.script(
        key,
        [
            fake.tool_calls(write("name.md", "Ada")),
            fake.text("Noted, Ada."),
            fake.text("Your name is Ada."),
        ],
    )
    session_id = await start_session(stack, worker, key)

    first = await send_when_idle(stack, session_id, "My name is Ada; note it.")
    assert first == f"{session_id}/turn-1"
    [call] = (await wait_for_state(stack, first, "awaiting_approval"))["pending"]
    session = await query(stack, session_id, "status")
    assert (session["running_turn_id"], session["running_turn_state"]) == (
        first, "awaiting_approval",
    )  # fmt: skip
    # One turn at a time: the validators refuse, and nothing reaches history.
    refused_send = await refused_update(stack, session_id, "send", {"input": "Hello?"})
    assert f"turn {first} is still running" in refused_send
    assert "still running" in await refused_update(stack, session_id, "close", {})
    await stack.temporal(
        "workflow", "signal", "--workflow-id", first, "--name", "approve",
        "--input", json.dumps({"call_id": call["call_id"], "approved": True}),
    )  # fmt: skip
    assert (await result(stack, first))["output"] == "Noted, Ada."

    second = await send_when_idle(stack, session_id, "What is my name?")
    assert (await result(stack, second))["output"] == "Your name is Ada."
    conversation = await query(stack, session_id, "messages")
    assert [message["role"] for message in conversation] == ["user", "assistant"] * 3
    asked_second = stack.fake.requests_for(key)[-1].body["messages"]
    assert "My name is Ada" in json.dumps(asked_second[0])  # the model saw the first exchange
    await until(lambda: query(stack, session_id, "status"), lambda s: s["state"] == "idle", "idle")
    closed = await update(stack, session_id, "close", {"reason": "done"})
    assert (closed["state"], closed["turns"]) == ("closed", 2)
    final = await stack.temporal("workflow", "result", "--workflow-id", session_id)
    assert final["result"]["state"] == "closed"


async def test_turnkeeper_chat_at_the_prompt(stack: SystemStack, tmp_path: Path) -> None:
    worker = await stack.start_worker()
    key = new_key()
    stack.fake.script(
        key,
        [
            fake.tool_calls(write("note.md", "blue")),
            fake.text("Saved your note."),
            fake.text("Your note says blue."),
        ],
    )
    agent_file = tmp_path / "agent.json"
    agent_file.write_text(json.dumps(turn_request(key)["agent"]))
    typed = "Save a note saying blue\ny\nWhat does my note say?\n/close\n"

    chat = await turnkeeper_with_input(
        worker, typed, "chat", "--agent", str(agent_file), "--session", f"chat-{key}"
    )

    assert chat.returncode == 0, chat.stdout + chat.stderr
    for line in (
        "write_file waits for your approval",
        "agent> Saved your note.",
        "agent> Your note says blue.",
        "Session closed after 2 turns",
    ):
        assert line in chat.stdout, chat.stdout
    assert (worker.workspace / "note.md").read_text() == "blue"


async def test_turnkeeper_chat_picks_up_a_turn_sent_from_elsewhere(stack: SystemStack) -> None:
    worker = await stack.start_worker()
    key = new_key()
    stack.fake.script(key, [fake.tool_calls(write("todo.md", "milk")), fake.text("Added milk.")])
    session_id = await start_session(stack, worker, key)
    sent = await send_when_idle(stack, session_id, "Add milk to my list")
    await wait_for_state(stack, sent, "awaiting_approval")

    # No agent file: the session exists. Its waiting turn is followed first, decided here.
    chat = await turnkeeper_with_input(worker, "y\n/quit\n", "chat", "--session", session_id)

    assert chat.returncode == 0, chat.stdout + chat.stderr
    for line in (
        f"Turn {sent} is still running; following it.",
        "write_file waits for your approval",
        "agent> Added milk.",
        f"The session stays open: turnkeeper chat --session {session_id}",
    ):
        assert line in chat.stdout, chat.stdout
    assert (worker.workspace / "todo.md").read_text() == "milk"
    left_open = await until(
        lambda: query(stack, session_id, "status"), lambda s: s["state"] == "idle", "idle"
    )
    assert [turn["joined_conversation"] for turn in left_open["recent_turns"]] == [True]


async def test_turnkeeper_chat_extends_a_spent_budget_at_the_prompt(
    stack: SystemStack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker = await stack.start_worker()
    key = new_key()
    stack.fake.script(
        key,
        [
            fake.tool_calls(LIST, usage=HALF_A_DOLLAR),
            fake.text("Listed them.", usage=HALF_A_DOLLAR),
            fake.text("Still here.", usage=HALF_A_DOLLAR),
        ],
    )
    agent = turn_request(key)["agent"] | {"price": PRICEY}
    constraints = {"cost_budget_usd": 0.4, "on_budget_exhausted": "pause"}
    agent_file = tmp_path / "agent.json"
    agent_file.write_text(json.dumps(agent | {"constraints": constraints}))
    session_id = f"chat-{key}"
    typed = "List the files\nlots\n1\nAnd now?\n/close\n"

    chat = await turnkeeper_with_input(
        worker, typed, "chat", "--agent", str(agent_file), "--session", session_id
    )

    assert chat.returncode == 0, chat.stdout + chat.stderr
    for line in (
        "the turn's cost budget is spent (request 1)",
        "'lots' is not a number of USD",
        "agent> Listed them.",
        "agent> Still here.",  # the $1 granted to the turn extended the session's budget too
        "Session closed after 2 turns",
    ):
        assert line in chat.stdout, chat.stdout
    client = await connect_as_user(worker, monkeypatch)
    status = await turnkeeper.session(client, session_id).status()
    assert (status.state, status.turns, status.cost_extended_usd) == ("closed", 2, 1)


@pytest.mark.parametrize("strategy", ["drop_oldest", "summarize"])
async def test_a_turn_over_its_token_limit_is_compacted(
    stack: SystemStack, monkeypatch: pytest.MonkeyPatch, strategy: str
) -> None:
    worker = await stack.start_worker()
    (worker.workspace / "chapter.md").write_text(CHAPTER)  # ~450 tokens a read
    key = new_key()
    stack.fake.script(key, [reader(READS)] * (READS + 2))
    request = turn_request(key)
    request["agent"]["compaction"] = {"strategy": strategy, "max_input_tokens": 1000}
    # The summary call has a system prompt of its own: the fake finds the script in the task.
    request["task"]["input"] = f"Read chapter.md again and again. [script:{key}]"

    client = await connect_as_user(worker, monkeypatch)
    handle = await turnkeeper.start_turn(client, request)
    events = [event async for event in handle.events()]
    report = await handle.result()

    compacted = [event for event in events if event.kind == "compacted"]
    assert compacted and all(event.strategy == strategy for event in compacted)
    assert all(event.tokens_after < event.tokens_before for event in compacted)
    logged = worker.events("compacted")
    assert [line["removed_messages"] for line in logged] == [e.removed_messages for e in compacted]
    # Only the requests shrank: the report keeps every message.
    summaries = len(compacted) if strategy == "summarize" else 0  # billed model calls too
    assert (report.outcome, report.llm_calls) == ("completed", READS + 1 + summaries)
    assert len(report.messages) == 2 * (READS + 1)
    sent = [len(request.body["messages"]) for request in stack.fake.requests_for(key)]
    assert sent[-1] < len(report.messages) - 1, sent


async def test_a_session_compacts_the_whole_conversation(
    stack: SystemStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker = await stack.start_worker()
    (worker.workspace / "chapter.md").write_text(CHAPTER)
    key = new_key()
    stack.fake.script(key, [session_reader(READS)] * 50)
    agent = turn_request(key)["agent"]
    agent["compaction"] = {"strategy": "summarize", "max_input_tokens": 1000}

    client = await connect_as_user(worker, monkeypatch)
    session = await turnkeeper.start_session(client, session_id=f"session-{key}", agent=agent)
    reports = []
    for n in (1, 2):
        # The summary call has a system prompt of its own: the fake finds the script here.
        turn = await session.send(f"Turn {n}: read chapter.md {READS} times. [script:{key}]")
        reports.append(await turn.result())

    assert [report.outcome for report in reports] == ["completed", "completed"]
    assert all(r.attempt is not None for r in stack.fake.requests_for(key))  # none refused
    assert worker.events("compacted") and reports[1].history_compaction is not None
    # The requests were compacted; the conversation keeps every message of both turns (once the
    # session has recorded the second turn's end, a moment after its result).
    await until(session.status, lambda status: status.state == "idle", "the session idle")
    assert len(await session.messages()) == 2 * (2 * READS + 2)
