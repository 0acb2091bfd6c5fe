"""Sessions: each `send` is a child turn that continues the conversation by reference; one turn at
a time; a cost budget across turns; queries, search attributes and `close`."""

from __future__ import annotations

import json
from typing import Any

import pytest
from temporalio.common import SearchAttributeKey
from turnkeeper.contracts.names import SA_SESSION_ID, SESSION_WORKFLOW_TYPE
from turnkeeper.contracts.session import SessionStatus

from tests.conftest import TurnRunner, new_key, scripted_request
from tests.fakes import fake_anthropic as fake
from tests.support.waiting import until
from turnkeeper.client.errors import SessionRefused
from turnkeeper.client.sessions import SessionHandle, start_session


def agent_for(key: str, **overrides: Any) -> dict[str, Any]:
    return scripted_request(key, agent=overrides)["agent"]


async def open_session(turns: TurnRunner, key: str, **fields: Any) -> SessionHandle:
    agent = fields.pop("agent", None) or agent_for(key)
    return await start_session(
        turns.client,
        session_id=f"session-{key}",
        agent=agent,
        task_queue=turns.task_queue,
        **fields,
    )


def texts(messages: list[Any]) -> list[str]:
    return [message.text() for message in messages]


async def test_the_second_turn_sees_the_first_exchange(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(key, [fake.text("Hello, Ada."), fake.text("Your name is Ada.")])
    session = await open_session(turns, key)

    first = await session.send("My name is Ada.")
    assert first.id == f"session-{key}/turn-1"
    assert (await first.result()).output == "Hello, Ada."
    second = await session.send("What is my name?")
    assert second.id == f"session-{key}/turn-2"
    report = await second.result()

    requests = turns.fake.requests_for(key)
    assert len(requests) == 2
    sent = requests[1].body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert json.dumps(sent).count("My name is Ada.") == 1
    assert "Hello, Ada." in json.dumps(sent[1])
    # By reference: the second turn's request and report carry only its own exchange.
    child_input = await _turn_input(turns, second.id)
    assert child_input["history_ref"].startswith("sha256:")
    assert "history" not in child_input
    assert texts(report.messages) == ["What is my name?", "Your name is Ada."]

    status = await _settled(session)
    assert texts(await session.messages()) == [
        "My name is Ada.",
        "Hello, Ada.",
        "What is my name?",
        "Your name is Ada.",
    ]
    assert (status.state, status.turns, status.running_turn_id) == ("idle", 2, None)
    assert status.conversation_ref == report.conversation_ref
    assert [t.turn_workflow_id for t in status.recent_turns] == [first.id, second.id]

    closed = await session.close("done")
    assert (closed.state, closed.closed_reason) == ("closed", "done")
    assert (await session.workflow.result()).turns == 2


async def test_a_send_during_a_running_turn_is_refused(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(
        key, [fake.tool_calls(("write_file", {"path": "a.md", "content": "x"})), fake.text("ok")]
    )
    session = await open_session(turns, key)
    first = await session.send("Write a.md")
    await _pending_approval(first)

    with pytest.raises(SessionRefused, match=r"turn-1 is still running.*one turn at a time"):
        await session.send("And another thing")
    with pytest.raises(SessionRefused, match="still running"):
        await session.close()
    status = await session.status()
    assert (status.state, status.turns, status.running_turn_id) == ("running", 1, first.id)

    await first.approve(approver="tester")
    await first.result()
    second_key_turn = await session.send("Thanks")  # waits out the moment the session records it
    assert second_key_turn.id.endswith("/turn-2")


async def test_the_cost_budget_spans_the_session(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(key, [fake.text("One."), fake.text("Two.")])
    budget = 0.02
    session = await open_session(turns, key, constraints={"cost_budget_usd": budget})

    first = await session.send("First")
    report = await first.result()
    assert report.cost_usd > 0
    second = await session.send("Second")
    child_input = await _turn_input(turns, second.id)
    left = child_input["task"]["constraints"]["cost_budget_usd"]
    assert left == pytest.approx(budget - report.cost_usd)
    await second.result()

    status = await _settled(session)
    assert status.cost_usd == pytest.approx(sum(t.cost_usd for t in status.recent_turns))
    assert status.cost_left_usd() == pytest.approx(budget - status.cost_usd)


async def test_a_send_with_nothing_left_is_refused(turns: TurnRunner) -> None:
    key = new_key()
    # A long answer spends more than the whole budget (a turn overspends by one call at most).
    turns.fake.script(key, [fake.text("word " * 400)])
    session = await open_session(turns, key, constraints={"cost_budget_usd": 0.0001})
    await (await session.send("Talk")).result()
    status = await _settled(session)
    assert status.cost_usd >= 0.0001

    with pytest.raises(SessionRefused, match=r"cost budget of \$0.0001 is spent"):
        await session.send("More")
    assert (await session.status()).turns == 1


async def test_a_failed_turn_costs_but_stays_out_of_the_conversation(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(key, [fake.text("Hi."), fake.tool_calls(("list_files", {"path": "."}))])
    session = await open_session(turns, key, agent=agent_for(key, max_iterations=1))
    await (await session.send("Hello")).result()
    failing = await session.send("List the files")
    with pytest.raises(Exception, match="max_iterations"):
        await failing.result()

    status = await _settled(session)
    last = status.recent_turns[-1]
    assert (last.outcome, last.error_type, last.joined_conversation) == (
        "failed",
        "MaxIterationsExceeded",
        False,
    )
    assert texts(await session.messages()) == ["Hello", "Hi."]
    assert status.turns == 2


async def test_search_attributes_name_the_session_and_its_turns(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(key, [fake.text("Hi.")])
    session = await open_session(turns, key)
    await (await session.send("Hello")).result()
    await _settled(session)

    session_key = SearchAttributeKey.for_keyword(SA_SESSION_ID)
    query = f'{SA_SESSION_ID} = "session-{key}"'

    async def listed_kinds() -> list[str]:
        return sorted([e.workflow_type async for e in turns.client.list_workflows(query)])

    # Visibility is eventually consistent.
    kinds = await until(listed_kinds, lambda kinds: len(kinds) == 2, "both workflows listed")
    assert kinds == [SESSION_WORKFLOW_TYPE, "AgentTurnWorkflow"]
    described = await session.workflow.describe()
    attributes = described.typed_search_attributes
    assert attributes.get(session_key) == f"session-{key}"
    assert attributes.get(SearchAttributeKey.for_keyword("SessionState")) == "idle"
    assert attributes.get(SearchAttributeKey.for_float("CostUsd")) == pytest.approx(
        (await session.status()).cost_usd
    )
    turn = await turns.client.get_workflow_handle(f"session-{key}/turn-1").describe()
    assert turn.typed_search_attributes.get(session_key) == f"session-{key}"


async def _turn_input(turns: TurnRunner, workflow_id: str) -> dict[str, Any]:
    handle = turns.client.get_workflow_handle(workflow_id)
    async for event in handle.fetch_history_events():
        if event.HasField("workflow_execution_started_event_attributes"):
            payloads = event.workflow_execution_started_event_attributes.input.payloads
            [request] = await turns.client.data_converter.decode(payloads)  # decrypts if keyed
            return request
    raise AssertionError(f"{workflow_id} has no start event")


async def _settled(session: SessionHandle) -> SessionStatus:
    """The session's status once it has recorded its last turn's end."""
    return await until(
        session.status,
        lambda status: status.running_turn_id is None,
        "the session records its last turn's end",
    )


async def _pending_approval(handle: Any) -> None:
    await until(handle.status, lambda status: status.pending, "the turn asks for approval")


async def test_a_cancelled_turn_leaves_the_session_usable(turns: TurnRunner) -> None:
    key = new_key()
    # One step (no assistant message yet), answered per attempt: the doomed turn, then the retry.
    turns.fake.script(
        key,
        [[fake.tool_calls(("write_file", {"path": "a.md", "content": "x"})), fake.text("Hi.")]],
    )
    session = await open_session(turns, key)
    doomed = await session.send("Write a.md")
    await _pending_approval(doomed)
    await doomed.cancel()

    status = await _settled(session)
    last = status.recent_turns[-1]
    assert (last.outcome, last.error_type, last.joined_conversation) == (
        "cancelled",
        "TurnCancelled",
        False,
    )
    assert await session.messages() == []
    # The cancelled exchange is not in the conversation: the model starts afresh.
    retry = await session.send("Hello")
    assert (await retry.result()).output == "Hi."
    assert turns.fake.requests_for(key)[-1].body["messages"][0]["content"][0]["text"] == "Hello"
