"""What a `decide` payload means for an MCP server's question: accept, decline or cancel."""

from __future__ import annotations

from turnkeeper.contracts.mcp_elicitation import ELICITATION_CANCEL, ElicitationAnswer, answer_of


def test_an_approval_accepts_with_its_input_as_the_answer() -> None:
    assert answer_of(True, "", {"name": "Ada"}) == ElicitationAnswer(
        action="accept", content={"name": "Ada"}
    )
    assert answer_of(True, "", None) == ElicitationAnswer(action="accept", content={})


def test_a_rejection_declines_unless_its_reason_is_cancel() -> None:
    assert answer_of(False, "not now", {"name": "ignored"}) == ElicitationAnswer(action="decline")
    assert answer_of(False, ELICITATION_CANCEL, None) == ElicitationAnswer(action="cancel")
    assert answer_of(False, "Cancel", None).action == "decline"  # exactly "cancel", nothing like it
