"""A server's question in the book of waiting calls: listed with its message and schema, in
state `awaiting_approval`, answered by a decision that fits its schema (and only then)."""

from __future__ import annotations

from datetime import UTC, datetime

from turnkeeper.contracts.mcp_elicitation import ElicitationAsked
from turnkeeper.contracts.messages import ToolUseBlock
from turnkeeper.contracts.signals import ALL_PENDING, ApproveInput
from turnkeeper.workflows.approvals.pending import PendingCalls

NOW = datetime(2026, 1, 1, tzinfo=UTC)
SCHEMA = {
    "type": "object",
    "properties": {"address": {"type": "string"}, "express": {"type": "boolean"}},
    "required": ["address"],
}


def asking() -> PendingCalls:
    pending = PendingCalls()
    waiting = pending.open(
        ToolUseBlock(id="c1", name="mcp__shop__order", input={}), "elicitation", NOW
    )
    waiting.asked = ElicitationAsked(message="Where to?", requested_schema=SCHEMA)
    return pending


def decision(**fields: object) -> ApproveInput:
    return ApproveInput.model_validate({"call_id": "c1", "approved": True, **fields})


def test_the_question_is_listed_with_its_message_and_schema() -> None:
    pending = asking()
    [listed] = pending.listing()
    assert (listed.kind, listed.message, listed.requested_schema) == (
        "elicitation",
        "Where to?",
        SCHEMA,
    )
    assert pending.state() == "awaiting_approval"


def test_an_answer_that_fits_applies_and_settles_the_question_once() -> None:
    pending = asking()
    answer = decision(input={"address": "1 Main St"})
    assert pending.decision_problem(answer, None) is None
    pending.decide(answer)
    assert pending.get("c1") is not None and pending.get("c1").settled  # type: ignore[union-attr]
    pending.close("c1")
    assert pending.decision_problem(answer, None) == "call 'c1': already decided"


def test_an_answer_that_does_not_fit_the_schema_says_what_is_wrong() -> None:
    problem = asking().decision_problem(decision(input={"express": "yes"}), None)
    assert problem is not None and problem.startswith("call 'c1': the answer does not fit")
    assert "missing required argument 'address'" in problem
    assert "'yes' is not of type 'boolean'" in problem


def test_no_input_is_an_empty_answer_and_a_rejection_needs_none() -> None:
    pending = asking()
    assert "missing required argument 'address'" in str(pending.decision_problem(decision(), None))
    assert pending.decision_problem(decision(approved=False, reason="cancel"), None) is None


def test_remember_is_for_approvals_and_approvers_are_checked_first() -> None:
    pending = asking()
    remembered = decision(input={"address": "x"}, remember=True)
    assert "remember applies to approvals" in str(pending.decision_problem(remembered, None))
    stranger = decision(input={"address": "x"}, approver="mallory")
    assert "'mallory' may not decide" in str(pending.decision_problem(stranger, ["alice"]))


def test_a_decision_for_every_call_leaves_the_question_alone() -> None:
    assert asking().why_not(ALL_PENDING, "approval") == "no call waits for approval"
    assert asking().why_not("c1", "external") == "the call waits for a decision"
