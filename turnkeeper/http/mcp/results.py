"""What a served call answers: the turn's outcome as a `CallToolResult`, and the turn's state as
a task status. The same words for a plain call, `tasks/result` and `tasks/get`, in both eras.
"""

from __future__ import annotations

import json
from typing import Any, Final, Literal

from mcp_types import CallToolResult, TextContent

from turnkeeper.client.turns import TurnOutcome
from turnkeeper.contracts.signals import TurnState

TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]

# A turn's state as a task's status (docs/mcp-serve.md, Task status). A turn that waits for a
# person (an approval, a budget extension, an external tool's result) is `input_required`,
# whoever that person is; an interrupt stops a turn early, which is what cancelling a task asks.
TASK_STATUS: Final[dict[TurnState, TaskStatus]] = {
    "running": "working",
    "awaiting_approval": "input_required",
    "awaiting_external": "input_required",
    "awaiting_budget": "input_required",
    "waiting": "working",
    "completed": "completed",
    "interrupted": "cancelled",
    "failed": "failed",
    "cancelled": "cancelled",
}
# How a closed turn's failure types read as a task's status: closed by a person, or failed.
_CLOSED_BY_A_PERSON: Final = frozenset({"Cancelled", "Terminated"})


def state_status(state: str | None) -> TaskStatus:
    """The task status of a turn in `state` (as its `TurnState` search attribute says; None
    before its first workflow task ran, when it is starting)."""
    return TASK_STATUS.get(state, "working")  # type: ignore[call-overload]


def outcome_status(outcome: TurnOutcome) -> TaskStatus:
    """The task status of a turn that has ended."""
    if outcome.report is not None:
        return "cancelled" if outcome.report.outcome == "interrupted" else "completed"
    assert outcome.failure is not None
    return "cancelled" if outcome.failure.type in _CLOSED_BY_A_PERSON else "failed"


def call_result(outcome: TurnOutcome, output_schema: dict[str, Any] | None) -> CallToolResult:
    """The tool result of a turn that has ended: its answer (and structured answer, for an agent
    with an `output_schema`), or, marked as an error, why it did not complete and what its
    partial report holds."""
    report = outcome.report
    if outcome.failure is not None:
        failure = outcome.failure
        partial = failure.report.output if failure.report else ""
        return _error(f"the turn failed ({failure.type}): {failure.message}", partial)
    assert report is not None
    if report.outcome != "completed":
        return _error(f"the turn ended {report.outcome} before its answer", report.output)
    if output_schema is None:
        return CallToolResult(content=[TextContent(text=report.output)])
    if not isinstance(report.structured_output, dict):
        return _error("the turn answered without the structured answer its schema asks for", "")
    text = report.output or json.dumps(report.structured_output)
    return CallToolResult(
        content=[TextContent(text=text)], structured_content=report.structured_output
    )


def refusal(message: str) -> CallToolResult:
    """A call refused before anything started (its arguments), said to the caller's model."""
    return CallToolResult(content=[TextContent(text=message)], is_error=True)


def _error(what: str, partial: str) -> CallToolResult:
    content = [TextContent(text=what)]
    if partial:
        content.append(TextContent(text=partial))
    return CallToolResult(content=content, is_error=True)
