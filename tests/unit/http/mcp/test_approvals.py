"""Approvals over MCP (turnkeeper.http.mcp.approvals.py) over the fake turns: who is asked, what
the question says, how each answer reads, and that a malformed answer decides nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp.server.elicitation import _validate_rendered_properties
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from turnkeeper.contracts.signals import PendingCall

from tests.unit.builders import request
from tests.unit.http.fake_turns import SINCE, TURN_ID, FakeTurns
from turnkeeper.http.mcp.approvals import (
    APPROVAL_SCHEMA,
    INPUT_SHOWN_CHARS,
    Verdict,
    apply,
    question,
    questions,
    read_answer,
    read_answers,
)
from turnkeeper.http.origins import StartedTurn
from turnkeeper.http.tokens import Identity, TokenStore


def identity(tmp_path: Path, name: str, **fields: Any) -> Identity:
    store = TokenStore(tmp_path / "tokens.json")
    store.add(name, **fields)
    [found] = [i for i in store.identities() if i.name == name]
    return found


def accepted(**content: Any) -> dict[str, Any]:
    return {"action": "accept", "content": content}


def test_the_form_is_one_the_spec_accepts() -> None:
    _validate_rendered_properties(APPROVAL_SCHEMA)  # raises for a field the spec refuses
    assert APPROVAL_SCHEMA["required"] == ["approve"]


async def test_an_approver_is_asked_and_a_stranger_is_not(tmp_path: Path) -> None:
    turns = FakeTurns(approvers=["ada"], started_by="mia")
    [asked] = await questions(turns, TURN_ID, identity(tmp_path, "ada"))
    assert asked.key == "call-1" and asked.tool == "write_file"
    # The owner sees the turn but does not approve its agent's calls: not asked.
    assert await questions(turns, TURN_ID, identity(tmp_path, "mia")) == []


async def test_an_approver_without_a_key_is_not_asked_where_approvers_sign(
    tmp_path: Path,
) -> None:
    public = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPm4xLwDhNUl4xFuy0n0ykzqxZt1vTTnDZhVdGbqz9H7"
    turns = FakeTurns(approvers=[{"name": "ada", "public_key": public}])
    assert await questions(turns, TURN_ID, identity(tmp_path, "ada")) == []


def test_the_question_names_the_tool_its_input_and_why() -> None:
    turn = StartedTurn(request(task={"constraints": {"require_approval": ["write_file"]}}), None)
    call = PendingCall(
        call_id="c", tool="write_file", input={"path": "a.md"}, kind="approval", since=SINCE
    )
    asked = question(turn, call)
    assert "write_file" in asked.message and '"path": "a.md"' in asked.message
    assert "Why: this agent's calls of write_file wait for approval" in asked.message
    assert asked.input_request == {"method": "elicitation/create", "params": asked.params}
    assert asked.params["requestedSchema"] == APPROVAL_SCHEMA


def test_a_sub_agents_call_says_which_sub_agent_asks() -> None:
    turn = StartedTurn(request(), None)
    call = PendingCall(
        call_id="c",
        tool="write_file",
        input={"content": "x" * (INPUT_SHOWN_CHARS * 2)},
        kind="approval",
        since=SINCE,
        workflow_id="lead/writer-1",
        agent_id="writer",
    )
    asked = question(turn, call)
    assert "Agent: writer" in asked.message and "sub-agent 'writer'" in asked.message
    assert "more characters)" in asked.message and len(asked.message) < INPUT_SHOWN_CHARS + 400


@pytest.mark.parametrize(
    ("answer", "verdict"),
    [
        (accepted(approve=True), Verdict("c", True)),
        (accepted(approve=False, reason="not there"), Verdict("c", False, "not there")),
        ({"action": "decline"}, Verdict("c", False, "declined over MCP")),
        (
            {"action": "cancel"},
            Verdict("c", False, "the approval question was dismissed over MCP"),
        ),
    ],
)
def test_each_answer_reads_as_a_decision(answer: dict[str, Any], verdict: Verdict) -> None:
    assert read_answer("c", answer) == verdict


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        (accepted(), "needs `approve`: true or false"),
        (accepted(approve="yes"), "needs `approve`: true or false"),
        (accepted(approve=True, reason=3), "`reason` that is not a string"),
        (accepted(approve=True, remember=True), "fields the form lacks: remember"),
        ({"action": "maybe"}, "is not an elicitation result"),
        ("yes", "is not an elicitation result"),
    ],
)
def test_a_malformed_answer_is_refused_naming_the_call(answer: Any, says: str) -> None:
    with pytest.raises(MCPError) as refused:
        read_answer("c", answer)
    assert refused.value.code == INVALID_PARAMS
    assert says in refused.value.message and "'c'" in refused.value.message
    assert "nothing was decided" in refused.value.message


def test_one_malformed_answer_refuses_the_whole_batch() -> None:
    with pytest.raises(MCPError):
        read_answers({"a": accepted(approve=True), "b": accepted(approve=1)}, {"a", "b"})
    with pytest.raises(MCPError, match="no approval question 'z' is open"):
        read_answers({"z": accepted(approve=True)}, {"a"})


async def test_an_answer_is_applied_as_the_identitys_decision(tmp_path: Path) -> None:
    turns = FakeTurns(approvers=["ada"])
    ada = identity(tmp_path, "ada")
    assert await apply(turns, TURN_ID, ada, [Verdict("call-1", False, "no")]) == ["call-1"]
    [(decision, key)] = turns.decided
    assert (decision.approver, decision.approved, decision.reason) == ("ada", False, "no")
    assert key is None
    # Decided already (by the inbox, say): skipped, nothing sent twice.
    assert await apply(turns, TURN_ID, ada, [Verdict("call-1", True)]) == []
    assert len(turns.decided) == 1


async def test_an_identity_that_may_not_decide_gets_a_clear_error(tmp_path: Path) -> None:
    turns = FakeTurns(approvers=["ada"], started_by="mia")
    with pytest.raises(MCPError, match="'mia' is not an approver"):
        await apply(turns, TURN_ID, identity(tmp_path, "mia"), [Verdict("call-1", True)])
    assert turns.decided == []
