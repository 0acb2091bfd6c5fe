"""A served turn as a tool result and as a task, in both eras (docs/mcp-serve.md): what a
completed, interrupted or failed turn answers, the task status of each turn state, and the
refusals of bad arguments."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, get_args

import pytest
from turnkeeper.contracts.signals import TurnState
from turnkeeper.contracts.turn import AgentReport

from turnkeeper.client.turns import TurnFailure, TurnOutcome
from turnkeeper.http.mcp import task_wire
from turnkeeper.http.mcp.calls import argument_problem
from turnkeeper.http.mcp.results import TASK_STATUS, call_result, outcome_status, state_status
from turnkeeper.http.mcp.turn_view import TurnView

SCHEMA = {"type": "object", "properties": {"title": {"type": "string"}}}
NOW = datetime(2026, 11, 29, 5, 0, tzinfo=UTC)


def report(
    outcome: str = "completed", output: str = "Done.", structured: Any = None
) -> AgentReport:
    return AgentReport(
        agent_id="a", task_id="t", outcome=outcome, output=output, structured_output=structured
    )


def ended(**fields: Any) -> TurnOutcome:
    return TurnOutcome("mcp-a-1", **fields)


def texts(result: Any) -> list[str]:
    return [block.text for block in result.content]


def test_a_completed_turn_answers_its_text_or_its_structured_answer() -> None:
    plain = call_result(ended(report=report()), None)
    typed = call_result(ended(report=report(output="", structured={"title": "N"})), SCHEMA)
    unfit = call_result(ended(report=report(structured=None)), SCHEMA)

    assert texts(plain) == ["Done."] and not plain.is_error and plain.structured_content is None
    assert typed.structured_content == {"title": "N"} and texts(typed) == ['{"title": "N"}']
    assert unfit.is_error and "structured answer" in texts(unfit)[0]


def test_an_interrupted_or_failed_turn_is_an_error_with_its_partial_answer() -> None:
    interrupted = call_result(ended(report=report("interrupted", "Half.")), None)
    failure = TurnFailure("TurnBudgetExceeded", "the cost budget is spent", report(output="So far"))
    failed = call_result(ended(failure=failure), SCHEMA)
    bare = call_result(ended(failure=TurnFailure("Terminated", "gone", None)), None)

    assert interrupted.is_error and texts(interrupted) == [
        "the turn ended interrupted before its answer",
        "Half.",
    ]
    assert failed.is_error and texts(failed) == [
        "the turn failed (TurnBudgetExceeded): the cost budget is spent",
        "So far",
    ]
    assert texts(bare) == ["the turn failed (Terminated): gone"]


def test_every_turn_state_has_a_task_status() -> None:
    assert sorted(TASK_STATUS) == sorted(get_args(TurnState))
    assert state_status(None) == "working" and state_status("awaiting_budget") == "input_required"
    assert outcome_status(ended(report=report())) == "completed"
    assert outcome_status(ended(report=report("max_tokens"))) == "completed"
    assert outcome_status(ended(report=report("interrupted"))) == "cancelled"
    assert outcome_status(ended(failure=TurnFailure("Cancelled", "", None))) == "cancelled"
    assert outcome_status(ended(failure=TurnFailure("LLMUnavailable", "", None))) == "failed"


def test_a_task_in_each_era() -> None:
    failure = TurnFailure("LLMUnavailable", "down", None)
    failed = TurnView(
        "mcp-a-1", "failed", "LLMUnavailable: down", NOW, NOW, outcome=ended(failure=failure)
    )
    waiting = TurnView("mcp-a-1", "input_required", "waiting", NOW, NOW)

    legacy = task_wire.legacy_view(failed)
    modern = task_wire.modern_view(failed, None, {})
    asking = task_wire.modern_view(waiting, None, {"k": {"method": "elicitation/create"}})

    assert legacy["status"] == "failed" and legacy["ttl"] is None and "result" not in legacy
    assert legacy["createdAt"] == "2026-11-29T05:00:00+00:00"
    # 2026: `failed` is for JSON-RPC errors; a failed turn is a tool result with isError.
    assert modern["status"] == "completed" and modern["result"]["isError"] is True
    assert modern["ttlMs"] is None and "ttl" not in modern
    assert asking["inputRequests"] == {"k": {"method": "elicitation/create"}}
    assert asking["pollIntervalMs"] > modern["pollIntervalMs"]


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        (None, "missing the required argument 'task'"),
        ({"task": None}, "missing the required argument 'task'"),
        ({"task": 1.5}, "'task' must be a string, got float"),
        ({"task": ""}, "'task' is empty"),
        ({"task": "x", "a": 1, "b": 2}, "unexpected argument(s) 'a', 'b'"),
    ],
)
def test_bad_arguments_are_said(arguments: dict[str, Any] | None, said: str) -> None:
    problem = argument_problem(arguments)
    assert problem is not None and said in problem
    assert argument_problem({"task": "Go."}) is None
