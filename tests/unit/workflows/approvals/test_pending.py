"""The book of waiting tool calls: which signal applies, and why the others do not."""

from __future__ import annotations

from datetime import UTC, datetime

from turnkeeper.contracts.messages import ToolUseBlock
from turnkeeper.contracts.signals import ALL_PENDING, ApproveInput, SubmitToolResultInput
from turnkeeper.workflows.approvals.pending import PendingCalls

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def use(call_id: str, name: str = "write_file") -> ToolUseBlock:
    return ToolUseBlock(id=call_id, name=name, input={"path": "a.txt"})


def approve(call_id: str, **fields: object) -> ApproveInput:
    return ApproveInput.model_validate({"call_id": call_id, "approved": True, **fields})


def book(*calls: tuple[str, str]) -> PendingCalls:
    pending = PendingCalls()
    for call_id, kind in calls:
        pending.open(use(call_id), kind, NOW)  # type: ignore[arg-type]
    return pending


def test_a_signal_for_an_open_call_of_its_kind_applies() -> None:
    pending = book(("a", "approval"), ("b", "external"))
    assert pending.why_not("a", "approval") is None
    assert pending.why_not("b", "external") is None


def test_an_unknown_call_id_is_no_such_pending_call() -> None:
    assert book(("a", "approval")).why_not("nope", "approval") == "no such pending call"


def test_a_signal_of_the_wrong_kind_says_what_the_call_waits_for() -> None:
    pending = book(("a", "approval"), ("b", "external"))
    assert pending.why_not("a", "external") == "the call waits for a decision"
    assert pending.why_not("b", "approval") == "the call waits for a result"


def test_a_call_is_settled_at_most_once() -> None:
    pending = book(("a", "approval"), ("b", "external"))
    pending.decide(approve("a"))
    pending.submit(SubmitToolResultInput(call_id="b", output="done"))
    assert pending.why_not("a", "approval") == "already decided"
    assert pending.why_not("b", "external") == "already decided"
    pending.close("a")
    assert pending.why_not("a", "approval") == "already decided"
    assert pending.get("a") is None


def test_approve_all_needs_an_open_approval() -> None:
    assert book(("b", "external")).why_not(ALL_PENDING, "approval") == "no call waits for approval"
    assert book(("a", "approval")).why_not(ALL_PENDING, "approval") is None


def test_approve_all_decides_every_open_approval_and_nothing_else() -> None:
    pending = book(("a", "approval"), ("b", "approval"), ("c", "external"))
    pending.decide(approve("a", approved=False))
    decided = pending.decide(approve(ALL_PENDING))
    assert [waiting.use.id for waiting in decided] == ["b"]
    assert pending.get("a").decision.approved is False  # type: ignore[union-attr]
    assert pending.get("c").decision is None  # type: ignore[union-attr]


def test_a_decision_problem_names_the_call() -> None:
    problem = book(("a", "approval")).decision_problem(approve("x"), None)
    assert problem == "call 'x': no such pending call"


def test_an_approver_not_on_the_list_is_refused_by_name() -> None:
    pending = book(("a", "approval"))
    problem = pending.decision_problem(approve("a", approver="mallory"), ["alice", "bob"])
    assert problem == "'mallory' may not decide calls of this agent (approvers: alice, bob)"
    assert pending.decision_problem(approve("a", approver="alice"), ["alice", "bob"]) is None


def test_an_anonymous_approver_is_refused_when_approvers_are_named() -> None:
    problem = book(("a", "approval")).decision_problem(approve("a"), ["alice"])
    assert problem is not None and problem.startswith("an anonymous approver may not decide")


def test_anyone_may_decide_when_the_agent_names_no_approvers() -> None:
    assert book(("a", "approval")).decision_problem(approve("a", approver="x"), None) is None


def test_an_edited_input_cannot_apply_to_every_call_at_once() -> None:
    problem = book(("a", "approval")).decision_problem(
        approve(ALL_PENDING, input={"path": "b.txt"}), None
    )
    assert problem is not None and "name its call_id instead of '*'" in problem


def test_the_state_follows_what_the_calls_wait_for() -> None:
    assert book().state() == "running"
    assert book(("b", "external")).state() == "awaiting_external"
    assert book(("b", "external"), ("a", "approval")).state() == "awaiting_approval"


def test_the_listing_shows_each_waiting_call() -> None:
    [listed] = book(("a", "approval")).listing()
    assert (listed.call_id, listed.tool, listed.kind, listed.since) == (
        "a",
        "write_file",
        "approval",
        NOW,
    )
    assert listed.input == {"path": "a.txt"}


def test_an_ended_turn_abandons_its_waiting_calls() -> None:
    pending = book(("a", "approval"), ("b", "external"))
    pending.abandon()
    assert (pending.listing(), pending.state()) == ([], "running")
    assert pending.why_not("a", "approval") == "already decided"
    assert pending.why_not(ALL_PENDING, "approval") == "no call waits for approval"
