"""The session's own state, as pure functions: what a turn is given, what joins the
conversation, what is refused and why."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from turnkeeper.contracts.messages import Message
from turnkeeper.contracts.session import RECENT_TURNS, SendInput, SessionRequest
from turnkeeper.contracts.turn import AgentReport, Constraints
from turnkeeper.workflows.sessions.state import Session

AGENT = {"id": "a", "model": "anthropic:claude-sonnet-4-6"}


def new_session(**constraints: object) -> Session:
    request = SessionRequest.model_validate(
        {"agent": AGENT, "session_id": "s1", "constraints": constraints}
    )
    return Session(request=request, started=datetime.now(UTC))


def answer(text: str, cost: float = 0.01, ref: str = "sha256:b") -> AgentReport:
    return AgentReport(
        agent_id="a",
        task_id="t",
        outcome="completed",
        output=text,
        messages=[Message(role="user", content="q"), Message(role="assistant", content=text)],
        cost_usd=cost,
        conversation_ref=ref,
    )


def test_a_turn_gets_the_session_defaults_its_overrides_and_what_is_left() -> None:
    session = new_session(cost_budget_usd=1.0, time_budget_ms=60_000, require_approval=["*"])
    session.cost_usd = 0.75
    session.conversation_ref = "sha256:a"
    overrides = Constraints.model_validate({"time_budget_ms": 5_000, "cost_budget_usd": 0.5})

    request = session.begin_turn(SendInput(input="hi", constraints=overrides))

    constraints = request.task.constraints
    assert constraints.time_budget_ms == 5_000  # the send's
    assert constraints.require_approval == ["*"]  # the session's default, kept
    assert constraints.cost_budget_usd == pytest.approx(0.25)  # capped by what is left
    assert (request.task.id, request.history_ref, request.history) == ("s1/turn-1", "sha256:a", [])
    assert (session.state, session.running_turn_id) == ("running", "s1/turn-1")


def test_without_a_session_budget_a_turn_keeps_its_own() -> None:
    session = new_session()
    request = session.begin_turn(
        SendInput(input="hi", constraints=Constraints(cost_budget_usd=0.2))
    )
    assert request.task.constraints.cost_budget_usd == 0.2


def test_an_answer_joins_the_conversation_and_a_cut_tool_call_does_not() -> None:
    session = new_session()
    session.begin_turn(SendInput(input="q"))
    session.record_answer(answer("fine", ref="sha256:one"))
    assert (session.conversation_ref, len(session.messages)) == ("sha256:one", 2)

    session.begin_turn(SendInput(input="q"))
    cut = answer("", ref="sha256:two")
    cut.outcome = "max_tokens"
    cut.messages[-1] = Message.model_validate(
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "x"}]}
    )
    session.record_answer(cut)

    assert (session.conversation_ref, len(session.messages)) == ("sha256:one", 2)
    assert [t.joined_conversation for t in session.recent_turns] == [True, False]
    assert session.cost_usd == pytest.approx(0.02)


def test_refusals_say_why() -> None:
    session = new_session(cost_budget_usd=0.01)
    session.begin_turn(SendInput(input="q"))
    assert "turn s1/turn-1 is still running" in (session.refusal_to_send() or "")
    assert "still running" in (session.refusal_to_close() or "")
    session.record_answer(answer("a", cost=0.02))
    assert "cost budget of $0.01 is spent ($0.020000 over 1 turns)" in (
        session.refusal_to_send() or ""
    )
    assert session.refusal_to_close() is None
    session.close("bye")
    assert "is closed" in (session.refusal_to_send() or "")
    assert "already closed" in (session.refusal_to_close() or "")


def test_the_carry_holds_references_and_figures_only() -> None:
    session = new_session()
    for n in range(RECENT_TURNS + 5):
        session.begin_turn(SendInput(input=f"q{n}"))
        session.record_answer(answer("a", ref=f"sha256:{n}"))

    carried = session.carry()
    resumed = Session.resume(session.request, carried)

    assert "messages" not in carried.model_dump()
    assert len(carried.recent_turns) == RECENT_TURNS
    assert (resumed.turns, resumed.conversation_ref) == (RECENT_TURNS + 5, session.conversation_ref)
    assert resumed.cost_usd == pytest.approx(session.cost_usd)
    assert resumed.messages == []  # read back from the store by the next run
