"""What a `RunAgentInput` asks of a turn (turnkeeper.http.agui.run_input) and how `resume`
answers become decisions (turnkeeper.http.agui.interrupts): every input a turn cannot take is
refused naming its field, and a resume is checked whole before anything is decided."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ag_ui.core import ResumeEntry, RunAgentInput
from turnkeeper.contracts.signals import PendingCall, TurnStatus

from tests.unit.builders import request
from tests.unit.http.fake_turns import SINCE
from turnkeeper.http.agui.interrupts import CANCELLED_REASON, decisions, interrupt
from turnkeeper.http.agui.run_input import APPROVAL_SCHEMA, NewMessage, Resume, requested
from turnkeeper.http.errors import ApiError
from turnkeeper.http.origins import StartedTurn
from turnkeeper.http.tokens import Identity, TokenStore


def run_input(messages: list[dict[str, Any]], **fields: Any) -> RunAgentInput:
    return RunAgentInput.model_validate(
        {"threadId": "t1", "runId": "r1", "messages": messages, **fields}
    )


def user(content: Any, id: str = "m1") -> dict[str, Any]:
    return {"id": id, "role": "user", "content": content}


def refused(run: RunAgentInput) -> ApiError:
    with pytest.raises(ApiError) as raised:
        requested(run)
    assert raised.value.status == 422
    return raised.value


def test_the_last_user_message_is_the_turns_input() -> None:
    history = [user("Hi", "m0"), {"id": "a0", "role": "assistant", "content": "Hello"}]

    assert requested(run_input([*history, user("Write a note.")])) == NewMessage("Write a note.")


def test_text_parts_are_joined() -> None:
    parts = [{"type": "text", "text": "Write"}, {"type": "text", "text": "a note."}]

    assert requested(run_input([user(parts)])) == NewMessage("Write\na note.")


def test_a_run_whose_last_message_is_not_the_users_is_refused_naming_it() -> None:
    last = {"id": "a0", "role": "assistant", "content": "Hello"}

    error = refused(run_input([user("Hi", "m0"), last]))

    assert "messages[1]" in error.message and "'assistant'" in error.message


def test_no_messages_and_an_empty_one_are_refused() -> None:
    assert "messages: empty" in refused(run_input([])).message
    assert "messages[0].content: empty" in refused(run_input([user("  ")])).message


def test_media_parts_are_refused_naming_their_type() -> None:
    image = {"type": "image", "source": {"type": "url", "value": "https://example.com/a.png"}}

    error = refused(run_input([user([{"type": "text", "text": "Look"}, image])]))

    assert "messages[0].content" in error.message and "image" in error.message


def test_a_resume_is_its_entries_and_an_interrupt_answered_twice_is_refused() -> None:
    entry = {"interruptId": "c1", "status": "resolved", "payload": {"approved": True}}

    asked = requested(run_input([], resume=[entry]))
    twice = refused(run_input([], resume=[entry, entry]))

    assert isinstance(asked, Resume) and asked.entries[0].interrupt_id == "c1"
    assert "answered twice: c1" in twice.message


# ---- resume answers as decisions -------------------------------------------------------------


def identity(tmp_path: Path, name: str, **fields: Any) -> Identity:
    store = TokenStore(tmp_path / "tokens.json")
    store.add(name, **fields)
    [found] = [i for i in store.identities() if i.name == name]
    return found


def waiting(*calls: tuple[str, str]) -> TurnStatus:
    pending = [
        PendingCall(call_id=call_id, tool="write_file", input={"path": "a"}, kind=kind, since=SINCE)
        for call_id, kind in calls
    ]
    return TurnStatus(state="awaiting_approval", pending=pending)


def entry(call_id: str, status: str = "resolved", payload: Any = None) -> ResumeEntry:
    return ResumeEntry(interrupt_id=call_id, status=status, payload=payload)


OWN = StartedTurn(request(), "alice")


def test_answers_become_decisions_of_their_calls(tmp_path: Path) -> None:
    alice = identity(tmp_path, "alice")
    edited = {"approved": True, "reason": "ok", "editedArgs": {"path": "b"}}
    status = waiting(("c1", "approval"), ("c2", "approval"), ("c3", "approval"))

    decided = decisions(
        alice,
        OWN,
        status,
        [
            entry("c1", payload=edited),
            entry("c2", payload={"approved": False}),
            entry("c3", "cancelled"),
        ],
    )

    bodies = [body for _, body in decided]
    assert [(b.call_id, b.approved) for b in bodies] == [("c1", True), ("c2", False), ("c3", False)]
    assert (bodies[0].input, bodies[0].reason) == ({"path": "b"}, "ok")
    assert bodies[2].reason == CANCELLED_REASON


def test_an_answer_to_a_call_that_does_not_wait_is_404(tmp_path: Path) -> None:
    alice = identity(tmp_path, "alice")

    with pytest.raises(ApiError) as raised:
        yes = {"approved": True}
        decisions(
            alice, OWN, waiting(("c1", "approval")), [entry("c1", payload=yes), entry("nope")]
        )

    assert raised.value.status == 404 and "resume[1].interruptId" in raised.value.message


def test_a_resume_that_leaves_a_call_unanswered_is_422(tmp_path: Path) -> None:
    alice = identity(tmp_path, "alice")
    status = waiting(("c1", "approval"), ("c2", "approval"))

    with pytest.raises(ApiError) as raised:
        decisions(alice, OWN, status, [entry("c1", payload={"approved": True})])

    assert raised.value.status == 422 and "'c2'" in raised.value.message


@pytest.mark.parametrize(
    ("payload", "fault"),
    [
        (None, "payload"),
        ({"approved": "yes"}, "approved"),
        ({"approved": True, "extra": 1}, "extra"),
        ({"approved": True, "editedArgs": "x"}, "editedArgs"),
    ],
)
def test_a_payload_that_is_no_approval_answer_is_422_naming_it(
    tmp_path: Path, payload: Any, fault: str
) -> None:
    alice = identity(tmp_path, "alice")

    with pytest.raises(ApiError) as raised:
        decisions(alice, OWN, waiting(("c1", "approval")), [entry("c1", payload=payload)])

    assert raised.value.status == 422
    assert "resume[0].payload" in raised.value.message and fault in raised.value.message


def test_who_may_not_decide_the_calls_is_403(tmp_path: Path) -> None:
    bob = identity(tmp_path, "bob", role="member")
    turn = StartedTurn(request(agent={"approvers": ["carol"]}), "bob")

    with pytest.raises(ApiError) as raised:
        decisions(bob, turn, waiting(("c1", "approval")), [entry("c1", payload={"approved": True})])

    assert raised.value.status == 403


def test_a_servers_question_is_answered_with_its_payload_or_cancelled(tmp_path: Path) -> None:
    alice = identity(tmp_path, "alice")
    status = waiting(("q1", "elicitation"), ("q2", "elicitation"))

    decided = decisions(
        alice, OWN, status, [entry("q1", payload={"city": "Oslo"}), entry("q2", "cancelled")]
    )

    [(_, answered), (_, cancelled)] = decided
    assert (answered.approved, answered.input) == (True, {"city": "Oslo"})
    assert (cancelled.approved, cancelled.reason) == (False, "cancel")


def test_an_approval_interrupt_names_its_call_and_the_answer_it_asks_for() -> None:
    call = waiting(("c1", "approval")).pending[0]

    asked = interrupt(OWN, call)

    assert (asked.id, asked.reason, asked.tool_call_id) == ("c1", "tool_call", "c1")
    assert asked.response_schema == APPROVAL_SCHEMA
    assert "write_file" in (asked.message or "")
    assert asked.metadata == {
        "turnkeeper": {"tool": "write_file", "input": {"path": "a"}, "kind": "approval"}
    }


def test_a_subagents_call_is_no_tool_call_of_this_run() -> None:
    call = waiting(("c1", "approval")).pending[0].model_copy(update={"workflow_id": "t/sub-1"})

    asked = interrupt(OWN, call)

    assert asked.tool_call_id is None
    assert asked.metadata["turnkeeper"]["workflow_id"] == "t/sub-1"
