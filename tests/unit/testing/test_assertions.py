"""The kit's assertions over a finished conversation: what they accept, and the message that
shows what happened when they do not."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from turnkeeper.contracts.messages import Message
from turnkeeper.contracts.signals import DecisionRecord
from turnkeeper.contracts.turn import AgentReport

from turnkeeper.testing import (
    assert_decisions,
    assert_outcome,
    assert_tools_called,
    call,
    tool_calls,
)


def report(outcome: str = "completed", output: str = "Refunded.") -> AgentReport:
    uses = [
        {"type": "tool_use", "id": "a", "name": "lookup_order", "input": {"order_id": "1042"}},
        {"type": "tool_use", "id": "b", "name": "refund", "input": {"amount_usd": 25.0}},
    ]
    messages = [
        Message(role="user", content="Refund 1042"),
        Message.model_validate({"role": "assistant", "content": uses}),
        Message(role="assistant", content=output),
    ]
    return AgentReport.model_validate(
        {
            "agent_id": "a",
            "task_id": "t",
            "outcome": outcome,
            "output": output,
            "messages": [m.model_dump() for m in messages],
        }
    )


def test_the_calls_are_read_in_order_with_their_inputs() -> None:
    assert tool_calls(report()) == [
        call("lookup_order", order_id="1042"),
        call("refund", amount_usd=25.0),
    ]
    assert_tools_called(report(), [call("lookup_order", order_id="1042"), "refund"])


def test_a_different_call_shows_both_lists() -> None:
    with pytest.raises(AssertionError) as failed:
        assert_tools_called(report(), [call("lookup_order", order_id="9")])
    assert "called:\n  1. lookup_order(order_id='1042')\n  2. refund(amount_usd=25.0)" in str(
        failed.value
    )
    assert "expected:\n  1. lookup_order(order_id='9')" in str(failed.value)


def test_decisions_and_outcome() -> None:
    record = DecisionRecord(call_id="b", tool="refund", approved=False, at=datetime.now(UTC))
    assert_decisions([record], [("refund", False)])
    with pytest.raises(
        AssertionError, match="decided:  refund rejected\nexpected: refund approved"
    ):
        assert_decisions([record], [("refund", True)])
    assert_outcome(report(), "completed", "Refunded.")
    with pytest.raises(AssertionError, match=r"ended 'completed' with output 'Refunded\.'"):
        assert_outcome(report(), "failed")
