"""A session's turn that pauses on a spent budget: the session's `status` says its running turn
waits for budget (the turn tells it with the `turn_state` signal), an extension of the turn's
cost budget extends the session's, and a `turn_state` signal that is wrong changes nothing."""

from __future__ import annotations

from typing import Any

import pytest
from turnkeeper.contracts.names import SIGNAL_TURN_STATE
from turnkeeper.contracts.session import SessionStatus

from tests.conftest import TurnRunner, new_key, scripted_request
from tests.fakes import fake_anthropic as fake
from tests.support.waiting import until
from tests.workflows.test_sessions import _settled
from turnkeeper.client.sessions import SessionHandle, start_session

PRICEY = {"input_per_mtok": 10_000.0, "output_per_mtok": 100_000.0}
USAGE = {"input_tokens": 20, "output_tokens": 3}  # $0.5 a call


async def pausing_session(turns: TurnRunner, key: str) -> SessionHandle:
    return await start_session(
        turns.client,
        session_id=f"session-{key}",
        agent=scripted_request(key, agent={"price": PRICEY})["agent"],
        constraints={"cost_budget_usd": 0.4, "on_budget_exhausted": "pause"},
        task_queue=turns.task_queue,
    )


async def status_when(session: SessionHandle, check: Any) -> SessionStatus:
    return await until(session.status, check, "the session's status gets there")


async def test_the_session_says_its_turn_waits_for_budget(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(
        key,
        [
            fake.tool_calls(("list_files", {"path": "."}), usage=USAGE),
            fake.text("Listed them.", usage=USAGE),
        ],
    )
    session = await pausing_session(turns, key)
    turn = await session.send("List the files")

    waiting = await status_when(session, lambda s: s.running_turn_state == "awaiting_budget")
    assert waiting.running_turn_id == turn.id
    assert waiting.budget_request is not None
    assert (waiting.budget_request.budget, waiting.budget_request.number) == ("cost", 1)
    assert waiting.state == "running"

    await turn.extend_budget(cost_usd=1, approver="tester")
    running = await status_when(session, lambda s: s.running_turn_state != "awaiting_budget")
    assert running.budget_request is None
    assert (await turn.result()).output == "Listed them."

    done = await _settled(session)
    assert (done.running_turn_state, done.budget_request) == (None, None)
    assert done.cost_extended_usd == 1.0
    assert done.cost_left_usd() == pytest.approx(0.4 + 1.0 - done.cost_usd)


async def test_the_session_says_its_turn_waits_for_an_approval(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(
        key, [fake.tool_calls(("write_file", {"path": "a.md", "content": "x"})), fake.text("ok")]
    )
    session = await start_session(
        turns.client,
        session_id=f"session-{key}",
        agent=scripted_request(key)["agent"],
        task_queue=turns.task_queue,
    )
    turn = await session.send("Write a.md")
    await status_when(session, lambda s: s.running_turn_state == "awaiting_approval")
    await turn.approve(approver="tester")
    await turn.result()
    done = await _settled(session)
    assert done.running_turn_state is None


@pytest.mark.parametrize(
    "payload",
    [
        {"turn_workflow_id": "someone-else/turn-1", "state": "awaiting_budget"},
        {"turn_workflow_id": "x", "state": "asleep"},
        "not an object",
    ],
)
async def test_a_wrong_turn_state_signal_changes_nothing(turns: TurnRunner, payload: Any) -> None:
    key = new_key()
    turns.fake.script(key, [fake.text("Hi.")])
    session = await pausing_session(turns, key)
    await session.workflow.signal(SIGNAL_TURN_STATE, payload)
    status = await session.status()
    assert (status.state, status.running_turn_state, status.budget_request) == ("idle", None, None)
    # The session still works.
    assert (await (await session.send("Hello")).result()).output == "Hi."
