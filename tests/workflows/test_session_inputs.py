"""Every field of a session's start input and of its `send` and `close` payloads, sent wrong: the
session fails typed at once (start input) or the validator refuses the update with a message
naming the field, and nothing reaches the conversation."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from temporalio.client import WorkflowFailureError, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError
from turnkeeper.contracts.names import SESSION_WORKFLOW_TYPE, UPDATE_CLOSE, UPDATE_SEND
from turnkeeper.contracts.session import SessionStatus

from tests.conftest import TurnRunner, new_key, scripted_request
from tests.fakes import fake_anthropic as fake
from turnkeeper.client.errors import InvalidSessionRequest
from turnkeeper.client.sessions import start_session

AGENT = {"id": "a", "model": "anthropic:claude-sonnet-4-6"}


def _request(session_id: str, changes: dict[str, Any]) -> dict[str, Any]:
    request: dict[str, Any] = {"agent": AGENT, "session_id": session_id, "constraints": {}}
    for name, value in changes.items():
        if value is _DROP:
            request.pop(name)
        else:
            request[name] = value
    return request


_DROP = object()

BAD_STARTS = [
    ({"agent": _DROP}, "agent: Field required"),
    ({"agent": "a"}, "agent: Input should be a valid dictionary"),
    ({"agent": {"id": "a"}}, "agent.model: Field required"),
    ({"agent": {**AGENT, "model": "Nope!:x"}}, "unknown provider 'Nope!'"),
    ({"agent": {**AGENT, "max_iterations": 0}}, "agent.max_iterations"),
    ({"agent": {**AGENT, "tools": ["read_file", "read_file"]}}, "agent.tools: lists 'read_file'"),
    ({"session_id": _DROP}, "session_id: Field required"),
    ({"session_id": ""}, "session_id: String should match pattern"),
    ({"session_id": "has spaces"}, "session_id: String should match pattern"),
    ({"session_id": "another-id"}, "must be the session's workflow id"),
    ({"constraints": "x"}, "constraints: Input should be a valid dictionary"),
    ({"constraints": {"cost_budget_usd": -1}}, "constraints.cost_budget_usd"),
    ({"constraints": {"time_budget_ms": 0}}, "constraints.time_budget_ms"),
    ({"constraints": {"budget": 1}}, "constraints.budget: Extra inputs are not permitted"),
    ({"extra": 1}, "extra: Extra inputs are not permitted"),
]


@pytest.mark.parametrize(("changes", "problem"), BAD_STARTS)
async def test_a_bad_start_input_fails_the_session_typed(
    turns: TurnRunner, changes: dict[str, Any], problem: str
) -> None:
    session_id = f"session-{uuid.uuid4()}"
    handle = await turns.client.start_workflow(
        SESSION_WORKFLOW_TYPE,
        _request(session_id, changes),
        id=session_id,
        task_queue=turns.task_queue,
    )
    with pytest.raises(WorkflowFailureError) as failure:
        await handle.result()
    error = failure.value.cause
    assert isinstance(error, ApplicationError)
    assert (error.type, error.non_retryable) == ("InvalidSessionRequest", True)
    assert problem in error.message


async def test_a_defect_before_the_session_begins_fails_it_instead_of_hanging_it(
    turns: TurnRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    from turnkeeper.workflows.sessions import agent_session_workflow

    def broken_begin(*args: object) -> None:
        raise RuntimeError("a defect while beginning")

    monkeypatch.setattr(agent_session_workflow, "_begin", broken_begin)
    session_id = f"session-{uuid.uuid4()}"
    handle = await turns.client.start_workflow(
        SESSION_WORKFLOW_TYPE, _request(session_id, {}), id=session_id, task_queue=turns.task_queue
    )
    with pytest.raises(WorkflowFailureError) as failure:
        await handle.result()
    error = failure.value.cause
    assert isinstance(error, ApplicationError)
    assert (error.type, error.non_retryable) == ("TurnInternalError", True)
    assert "before the session began: RuntimeError: a defect while beginning" in error.message


async def test_a_cost_budget_on_an_unpriced_model_is_refused_at_the_start(
    turns: TurnRunner,
) -> None:
    session_id = f"session-{uuid.uuid4()}"
    request = _request(
        session_id,
        {
            "agent": {**AGENT, "model": "anthropic:unpriced-model"},
            "constraints": {"cost_budget_usd": 1},
        },
    )
    handle = await turns.client.start_workflow(
        SESSION_WORKFLOW_TYPE, request, id=session_id, task_queue=turns.task_queue
    )
    with pytest.raises(WorkflowFailureError) as failure:
        await handle.result()
    assert isinstance(failure.value.cause, ApplicationError)
    assert failure.value.cause.message.startswith(
        "invalid session request: constraints.cost_budget_usd: no price is known"
    )


async def test_the_client_refuses_a_bad_start_before_starting(turns: TurnRunner) -> None:
    with pytest.raises(InvalidSessionRequest, match="session_id"):
        await start_session(turns.client, session_id="bad id", agent=AGENT)
    with pytest.raises(InvalidSessionRequest, match=r"agent\.model"):
        await start_session(turns.client, session_id="ok", agent={"id": "a"})


BAD_SENDS = [
    ({}, "input: Field required"),
    ({"input": ""}, "input: String should have at least 1 character"),
    ({"input": 7}, "input: Input should be a valid string"),
    ({"input": "hi", "constraints": "x"}, "constraints: Input should be a valid dictionary"),
    ({"input": "hi", "constraints": {"cost_budget_usd": 0}}, "constraints.cost_budget_usd"),
    ({"input": "hi", "constraints": {"nope": 1}}, "constraints.nope: Extra inputs"),
    ({"input": "hi", "history": []}, "history: Extra inputs are not permitted"),
    ("hi", "Input should be a valid dictionary"),
]

BAD_CLOSES = [
    ({"reason": 5}, "reason: Input should be a valid string"),
    ({"reason": "x" * 1001}, "reason: String should have at most 1000 characters"),
    ({"why": "done"}, "why: Extra inputs are not permitted"),
]


async def test_bad_sends_and_closes_are_refused_and_lose_nothing(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(key, [fake.text("Hi.")])
    session = await start_session(
        turns.client,
        session_id=f"session-{key}",
        agent=scripted_request(key)["agent"],
        task_queue=turns.task_queue,
    )
    for payload, problem in BAD_SENDS:
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await session.workflow.execute_update(UPDATE_SEND, payload)
        assert isinstance(refused.value.cause, ApplicationError)
        assert refused.value.cause.type == "SessionRefused"
        assert problem in refused.value.cause.message, (payload, refused.value.cause.message)
    for payload, problem in BAD_CLOSES:
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await session.workflow.execute_update(UPDATE_CLOSE, payload)
        assert problem in str(refused.value.cause), payload

    status = await session.status()
    assert (status.state, status.turns) == ("idle", 0)
    # Validators refuse before anything is written: no update reached the session's history.
    events = [event async for event in session.workflow.fetch_history_events()]
    accepted = "workflow_execution_update_accepted_event_attributes"
    assert not [event for event in events if event.HasField(accepted)]
    # And the session still works.
    turn = await session.send("Hello")
    assert (await turn.result()).output == "Hi."
    closed = await session.close()
    assert isinstance(closed, SessionStatus) and closed.state == "closed"
    # Closed is ended: the server itself refuses updates to a completed workflow.
    with pytest.raises(RPCError, match="already completed"):
        await session.workflow.execute_update(UPDATE_SEND, {"input": "after close"})
