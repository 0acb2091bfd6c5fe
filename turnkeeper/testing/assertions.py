"""Assertions a test of an agent reads well: the tools called, in order, with their inputs; the
decisions on its approvals; its outcome. Each fails with a message that shows what happened.

    report = await handle.result()
    assert_tools_called(report, [call("lookup_order", order_id="1042"), "refund"])
    assert_decisions(await handle.decisions(), [("refund", True)])
    assert_outcome(report, "completed")

Plain functions over the report, the transcript and the decisions, so they run without a server.
"""

from __future__ import annotations

from collections.abc import Sequence

from turnkeeper.contracts.messages import Message
from turnkeeper.contracts.signals import DecisionRecord
from turnkeeper.contracts.turn import AgentReport
from turnkeeper.testing.script import ToolCall


def tool_calls(turn: AgentReport | Sequence[Message]) -> list[ToolCall]:
    """The tool calls the model made in a report's conversation (or in `messages`), in order."""
    messages = turn.messages if isinstance(turn, AgentReport) else turn
    return [
        ToolCall(use.name, dict(use.input))
        for message in messages
        if message.role == "assistant"
        for use in message.tool_uses()
    ]


def assert_tools_called(
    turn: AgentReport | Sequence[Message], expected: Sequence[ToolCall | str]
) -> None:
    """The model called exactly `expected`, in order: a `call(tool, **input)` matches that tool
    with that input, a bare name matches that tool with any input."""
    made = tool_calls(turn)
    matches = len(made) == len(expected) and all(
        _matches(call, wanted) for call, wanted in zip(made, expected, strict=True)
    )
    if not matches:
        raise AssertionError(
            "the tools called differ from those expected\n"
            f"called:\n{_listing(made)}\nexpected:\n{_listing(expected)}"
        )


def assert_decisions(
    decisions: Sequence[DecisionRecord], expected: Sequence[tuple[str, bool]]
) -> None:
    """The approvals were decided as `expected`: `(tool, approved)` pairs, in order."""
    made = [(record.tool, record.approved) for record in decisions]
    if made != list(expected):
        raise AssertionError(
            "the decisions differ from those expected\n"
            f"decided:  {_decisions(made)}\nexpected: {_decisions(expected)}"
        )


def assert_outcome(report: AgentReport, outcome: str, output: str | None = None) -> None:
    """The turn ended with `outcome` (and, if given, answered exactly `output`)."""
    if report.outcome != outcome or (output is not None and report.output != output):
        wanted = f"{outcome!r}" + (f" with output {output!r}" if output is not None else "")
        raise AssertionError(
            f"the turn ended {report.outcome!r} with output {report.output!r}, expected {wanted}"
        )


def _matches(call: ToolCall, wanted: ToolCall | str) -> bool:
    if isinstance(wanted, str):
        return call.tool == wanted
    return call == wanted


def _listing(calls: Sequence[ToolCall | str]) -> str:
    if not calls:
        return "  (none)"
    return "\n".join(
        f"  {index}. {call if isinstance(call, ToolCall) else call + '(...)'}"
        for index, call in enumerate(calls, 1)
    )


def _decisions(decisions: Sequence[tuple[str, bool]]) -> str:
    words = [f"{tool} {'approved' if approved else 'rejected'}" for tool, approved in decisions]
    return ", ".join(words) or "(none)"
