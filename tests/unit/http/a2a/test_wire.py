"""A served turn in A2A's words (docs/a2a.md): the task of a waiting and of an ended turn, the
context a turn id belongs to, and what an answer to `input-required` must hold to be a
decision."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from a2a.helpers.proto_helpers import new_data_part, new_text_part
from a2a.types import InvalidParamsError, Message, Part, Role, TaskState
from google.protobuf.json_format import MessageToDict
from turnkeeper.contracts.signals import PendingCall, TurnStatus
from turnkeeper.contracts.turn import AgentReport

from turnkeeper.client.turns import TurnOutcome
from turnkeeper.http.a2a.handler import conversation_of
from turnkeeper.http.a2a.wire import decision_of, task_of, text_of
from turnkeeper.http.mcp.turn_view import TurnView

NOW = datetime(2026, 11, 29, 5, 0, tzinfo=UTC)
TURN = "conversation:writer:ctx-1/turn-2"


def message(*parts: Part) -> Message:
    return Message(message_id="m", role=Role.ROLE_USER, parts=list(parts))


def test_a_waiting_turn_is_input_required_and_names_its_call_and_the_answer() -> None:
    waiting = PendingCall(
        call_id="toolu_1", tool="write_file", input={"path": "a.md"}, kind="approval", since=NOW
    )
    status = TurnStatus(state="awaiting_approval", pending=[waiting])
    turn = TurnView(TURN, "input_required", "waiting", NOW, NOW, turn_status=status)

    task = task_of(turn, "ctx-1")

    assert (task.id, task.context_id) == (TURN, "ctx-1")
    assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    words, data = task.status.message.parts
    assert "write_file (call_id toolu_1)" in words.text and '"approved": true|false' in words.text
    assert MessageToDict(data.data) == {
        "call_id": "toolu_1",
        "tool": "write_file",
        "input": {"path": "a.md"},
        "kind": "approval",
    }
    assert list(task.artifacts) == []


@pytest.mark.parametrize(
    ("outcome", "state"),
    [("completed", TaskState.TASK_STATE_COMPLETED), ("interrupted", TaskState.TASK_STATE_CANCELED)],
)
def test_an_ended_turn_carries_its_answer_as_the_answer_artifact(
    outcome: str, state: TaskState.ValueType
) -> None:
    report = AgentReport(agent_id="writer", task_id="t", outcome=outcome, output="Half of it.")
    ended = TurnOutcome(TURN, report=report)
    status = "completed" if outcome == "completed" else "cancelled"
    task = task_of(TurnView(TURN, status, "ended", NOW, NOW, outcome=ended), "ctx-1")

    assert task.status.state == state
    [artifact] = task.artifacts
    assert artifact.artifact_id == "answer" and artifact.parts[0].text == "Half of it."


def test_a_task_id_names_its_context_only_as_a_conversation_turn_of_the_agent() -> None:
    assert conversation_of("writer", TURN) == "ctx-1"
    assert conversation_of("writer", "conversation:writer:a:b.c/turn-1") == "a:b.c"
    assert conversation_of("reader", TURN) is None  # another agent's conversation
    assert conversation_of("writer", "conversation:writer:ctx-1") is None  # the session itself
    assert conversation_of("writer", "turn-writer-1") is None  # a turn of the API
    assert conversation_of("writer", "conversation:writer:ctx-1/sub-1") is None


@pytest.mark.parametrize(
    ("parts", "problem"),
    [
        ((), "one data part"),
        ((new_text_part("yes"),), "one data part"),
        ((new_data_part({"call_id": "c"}), new_data_part({"call_id": "d"})), "one data part"),
        ((new_data_part({"call_id": "c"}),), "approved: Field required"),
        ((new_data_part({"call_id": "c", "approved": "maybe"}),), "approved"),
        ((new_data_part({"call_id": "c", "approved": True, "approver": "x"}),), "approver"),
    ],
)
def test_an_answer_that_is_no_decision_is_invalid_params(
    parts: tuple[Part, ...], problem: str
) -> None:
    with pytest.raises(InvalidParamsError) as refused:
        decision_of(message(*parts))
    assert problem in refused.value.message


def test_a_decision_is_the_data_part_and_a_turn_needs_text() -> None:
    decided: Any = decision_of(message(new_data_part({"call_id": "c", "approved": False})))
    assert (decided.call_id, decided.approved, decided.reason) == ("c", False, "")
    assert text_of(message(new_text_part("Write it."), new_text_part(" "))) == "Write it."
    with pytest.raises(InvalidParamsError, match="needs a text part"):
        text_of(message(new_data_part({"approved": True})))
