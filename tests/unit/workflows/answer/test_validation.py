"""The correction a rejected answer sends back, and a turn that ends on a rejected answer: its
failure says why and its report carries the answer, not the correction after it."""

from __future__ import annotations

from datetime import UTC, datetime

from turnkeeper.contracts.activity_io import ModelCallResult
from turnkeeper.contracts.messages import Message, TextBlock
from turnkeeper.contracts.turn import TurnRequest, Usage
from turnkeeper.workflows.answer.validation import corrective
from turnkeeper.workflows.turn_state import Turn


def test_the_correction_names_the_check_and_its_reason() -> None:
    text = corrective("no_pii", "the answer holds an email address", structured=False)

    assert text == (
        "Your final answer was rejected by the output check 'no_pii': the answer holds an "
        "email address\nAnswer again, correcting this."
    )
    assert "only the JSON value" in corrective("no_pii", "why", structured=True)


def _answer(text: str) -> ModelCallResult:
    message = Message(role="assistant", content=[TextBlock(text=text)])
    return ModelCallResult(
        message=message,
        stop_reason="end_turn",
        usage=Usage(),
        cost_usd=0,
        conversation_ref="c",
        duration_ms=1,
    )


def _turn_with_answer(text: str) -> Turn:
    request = TurnRequest.model_validate(
        {"agent": {"id": "a", "model": "demo:x"}, "task": {"id": "t", "input": "go"}}
    )
    turn = Turn.begin(request, datetime(2026, 1, 1, tzinfo=UTC))
    turn.record_model_call(_answer(text))
    return turn


def test_a_report_after_a_rejection_carries_the_rejected_answer() -> None:
    turn = _turn_with_answer("It is 42.")

    turn.send_back("Answer again.", "output validator 'no_digits': words only")

    report = turn.report("failed", datetime(2026, 1, 1, tzinfo=UTC))
    assert report.output == "It is 42."
    assert report.messages[-1].text() == "Answer again."
    assert turn.rejected is not None and turn.rejected.why.startswith("output validator")


def test_the_next_answer_clears_the_rejection() -> None:
    turn = _turn_with_answer("It is 42.")
    turn.send_back("Answer again.", "why")

    turn.record_model_call(_answer("Forty-two."))

    assert turn.rejected is None
    assert turn.report("completed", datetime(2026, 1, 1, tzinfo=UTC)).output == "Forty-two."
