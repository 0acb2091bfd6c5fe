"""Steering's pure parts: where a queued steer joins the conversation, which iteration reads it,
the payloads the updates refuse, why the validators refuse a steer, interrupt or cancel, and the
signing kinds and the first run that keep a signature from passing for another kind or another
turn under the same workflow id."""

from __future__ import annotations

from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from pydantic import ValidationError
from temporalio import workflow
from turnkeeper.contracts import decision_signing
from turnkeeper.contracts.activity_io import ModelCallResult
from turnkeeper.contracts.decision_signing import DECISION, SIGNING_VERSION, public_key_line
from turnkeeper.contracts.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from turnkeeper.contracts.steering import (
    CANCEL,
    INTERRUPT,
    STEER,
    CancelInput,
    InterruptInput,
    SteerInput,
)
from turnkeeper.contracts.turn import Usage
from turnkeeper.workflows.approvals.steering import Interrupted, Steering
from turnkeeper.workflows.inputs import handlers as inputs
from turnkeeper.workflows.turn_state import Settled, Turn

from tests.unit.builders import START, request, turn
from tests.unit.workflow_clock import WorkflowClock

WORKFLOW_ID = "turn-steered"
RUN = "run-of-this-turn"


@pytest.fixture
def in_workflow(monkeypatch: pytest.MonkeyPatch) -> WorkflowClock:
    monkeypatch.setattr(workflow, "info", lambda: SimpleNamespace(workflow_id=WORKFLOW_ID))
    return WorkflowClock(monkeypatch, START)


def answered(t: Turn, *uses: ToolUseBlock, text: str = "") -> None:
    content: list[Any] = [TextBlock(text=text)] if text else []
    message = Message(role="assistant", content=[*content, *uses])
    t.begin_iteration()
    t.record_model_call(
        ModelCallResult(
            message=message,
            stop_reason="tool_use",
            usage=Usage(),
            model="m",
            cost_usd=0.0,
            conversation_ref="conv-1",
            duration_ms=1,
        )
    )


def steer(t: Turn, steering: Steering, message: str, author: str = "alice") -> int:
    return steering.steer(t, SteerInput(message=message, author=author), START).iteration


def test_a_steer_joins_the_tool_results_so_that_roles_alternate() -> None:
    t, steering = turn(), Steering()
    use = ToolUseBlock(id="toolu_1", name="list_files", input={})
    answered(t, use)
    steering.called_in = t.iteration
    t.record_tool_results([Settled(ToolResultBlock(tool_use_id="toolu_1", content="a.md"))])

    assert steer(t, steering, "Look in docs/ too.") == 2
    delivered = t.deliver_steers()

    assert [d.text for d in delivered] == ["Look in docs/ too."]
    assert [m.role for m in t.messages] == ["user", "assistant", "user"]
    result, added = t.messages[-1].content
    assert isinstance(result, ToolResultBlock) and added == TextBlock(text="Look in docs/ too.")
    assert t.unsent[-1].content[-1] == added
    assert t.steers.queued_steers == [] and t.deliver_steers() == []
    assert [i.kind for i in t.steers.interventions] == ["steer"]


def test_a_steer_after_an_answer_is_a_user_message_of_its_own() -> None:
    t = turn()
    answered(t, text="Here it is.")
    Steering().steer(t, SteerInput(message="Shorter.", author="bob"), START)

    t.deliver_steers()

    assert [m.role for m in t.messages] == ["user", "assistant", "user"]
    assert t.messages[-1].text() == "Shorter." and t.unsent[-1].role == "user"


def test_a_steer_before_the_first_call_joins_the_task() -> None:
    t, steering = turn(), Steering()
    assert steer(t, steering, "Be brief.") == 1
    t.deliver_steers()
    assert len(t.messages) == 1
    assert [b.text for b in t.messages[0].content if isinstance(b, TextBlock)] == [
        "Do the thing.",
        "Be brief.",
    ]


def test_the_iteration_of_a_steer_is_the_next_call_s() -> None:
    t, steering = turn(), Steering()
    t.begin_iteration()  # iteration 1, its model call not started (e.g. waiting for a budget)
    assert steering.next_call(t) == 1
    steering.called_in = 1  # the call is in flight
    assert steering.next_call(t) == 2


def test_a_steer_needs_a_message_and_nothing_else() -> None:
    for payload in ({"message": ""}, {"message": "  \n"}, {"author": "a"}):
        with pytest.raises(ValueError, match="invalid steer: message"):
            inputs.parsed(payload, SteerInput, "steer")
    with pytest.raises(ValueError, match="invalid steer: urgent: Extra inputs"):
        inputs.parsed({"message": "x", "urgent": True}, SteerInput, "steer")
    with pytest.raises(ValidationError):
        SteerInput(message="x" * 20_001)
    with pytest.raises(ValueError, match=r"invalid interrupt: .*reason"):
        inputs.parsed({"reason": 5}, InterruptInput, "interrupt")
    assert InterruptInput.model_validate({}).reason == ""


def test_a_turn_refuses_steers_once_it_ends_or_finishes_or_is_interrupted() -> None:
    steering, payload = Steering(), SteerInput(message="x")
    assert steering.problem(None, payload) == "the turn has not begun"
    t = turn()
    assert steering.problem(t, payload) is None
    steering.finishing = True
    assert (
        steering.problem(t, payload)
        == "the turn has ended (running); there is nothing left to steer"
    )
    steering.finishing = False
    t.end("completed", START)
    found = steering.problem(t, InterruptInput())
    assert found == "the turn has ended (completed); there is nothing left to interrupt"
    t, steering = turn(), Steering()
    steering.interrupt_turn(t, InterruptInput(author="carol"), START)
    found = steering.problem(t, payload)
    assert found == "the turn is being interrupted (by carol); it takes no more steers"
    with pytest.raises(Interrupted):
        steering.check()


def test_where_the_agent_names_approvers_only_they_steer() -> None:
    t = turn(request(agent={"approvers": ["alice"]}))
    steering = Steering()
    assert steering.problem(t, SteerInput(message="x", author="alice")) is None
    found = steering.problem(t, InterruptInput(author=""))
    assert found == "an anonymous author may not interrupt turns of this agent (approvers: alice)"


def test_an_interrupt_after_a_model_call_starts_none_of_its_tools() -> None:
    t, steering = turn(), Steering()
    use = ToolUseBlock(id="toolu_9", name="write_file", input={"path": "a"})
    answered(t, use)
    steering.stop_before_tools(t, [use])  # not interrupted: nothing happens
    steering.interrupt_turn(t, InterruptInput(reason="stop"), START)
    with pytest.raises(Interrupted):
        steering.stop_before_tools(t, [use])
    [result] = t.messages[-1].content
    assert isinstance(result, ToolResultBlock) and result.is_error
    assert result.tool_use_id == "toolu_9"


def keyed(alice: Ed25519PrivateKey) -> Turn:
    t = turn(
        request(agent={"approvers": [{"name": "alice", "public_key": public_key_line(alice)}]})
    )
    t.approvals.verify_signatures_as(SIGNING_VERSION, RUN)
    return t


def test_a_keyed_turn_takes_signed_steers_once(in_workflow: WorkflowClock) -> None:
    alice = Ed25519PrivateKey.generate()
    t, steering = keyed(alice), Steering()
    unsigned = SteerInput(message="Go on.", author="alice")
    found = steering.problem(t, unsigned)
    assert found is not None and "the steer is not signed" in found
    expires = START + timedelta(minutes=5)
    signed = unsigned.signed_with(alice, WORKFLOW_ID, "unit-agent", expires, first_run_id=RUN)
    assert steering.problem(t, signed) is None

    steering.steer(t, signed, START)

    found = steering.problem(t, signed)
    assert found is not None and "applied already" in found
    elsewhere = unsigned.signed_with(alice, "turn-other", "unit-agent", expires, first_run_id=RUN)
    found = steering.problem(t, elsewhere)
    assert found is not None and "does not verify" in found
    earlier_turn = unsigned.signed_with(
        alice, WORKFLOW_ID, "unit-agent", expires, first_run_id="run-of-an-earlier-turn"
    )
    found = steering.problem(t, earlier_turn)
    assert found is not None and "does not verify" in found
    in_workflow.advance(s=600)
    again = unsigned.model_copy(update={"message": "Again."}).signed_with(
        alice, WORKFLOW_ID, "unit-agent", expires, first_run_id=RUN
    )
    found = steering.problem(t, again)
    assert found is not None and "expired" in found


def test_a_steer_signature_is_no_interrupt_and_no_decision(in_workflow: WorkflowClock) -> None:
    alice = Ed25519PrivateKey.generate()
    t, steering = keyed(alice), Steering()
    expires = START + timedelta(minutes=5)
    signature = (
        SteerInput(message="m", author="alice")
        .signed_with(alice, WORKFLOW_ID, "unit-agent", expires, first_run_id=RUN)
        .signature
    )
    assert signature is not None
    # The same fields under another kind: an interrupt, or a decision, never verifies.
    as_interrupt = InterruptInput(author="alice", signature=signature)
    found = steering.problem(t, as_interrupt)
    assert found is not None and "does not verify" in found
    fields = SteerInput(message="m", author="alice").signed_fields(WORKFLOW_ID, "unit-agent", RUN)
    key = public_key_line(alice)
    assert decision_signing.signature_problem(STEER, fields, signature, key, START) is None
    for kind in (INTERRUPT, CANCEL, DECISION):
        found = decision_signing.signature_problem(kind, fields, signature, key, START)
        assert found is not None and f"turnkeeper-{kind}-v3" in found


def test_a_keyed_turn_takes_a_cancel_signed_for_its_run_only(in_workflow: WorkflowClock) -> None:
    alice = Ed25519PrivateKey.generate()
    t, steering = keyed(alice), Steering()
    unsigned = CancelInput(reason="wrong workspace", author="alice")
    expires = START + timedelta(minutes=5)
    found = steering.problem(t, unsigned)
    assert found is not None and "the cancel is not signed" in found
    assert "(turnkeeper cancel --key)" in found
    earlier = unsigned.signed_with(alice, WORKFLOW_ID, "unit-agent", expires, 3, "run-before")
    found = steering.problem(t, earlier)
    assert found is not None and "does not verify" in found
    by_mallory = unsigned.model_copy(update={"author": "mallory"})
    found = steering.problem(t, by_mallory)
    assert found is not None and "'mallory' may not cancel turns of this agent" in found
    # An interrupt's signature does not cancel, even with the same reason.
    interrupt = InterruptInput(reason="wrong workspace", author="alice")
    signature = interrupt.signed_with(alice, WORKFLOW_ID, "unit-agent", expires, 3, RUN).signature
    found = steering.problem(t, unsigned.model_copy(update={"signature": signature}))
    assert found is not None and "does not verify" in found

    signed = unsigned.signed_with(alice, WORKFLOW_ID, "unit-agent", expires, 3, RUN)
    steering.interrupt_turn(t, interrupt, START)  # a cancel still goes past an interrupt
    assert steering.problem(t, signed) is None
