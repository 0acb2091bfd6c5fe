"""The turn's budgets, read off deterministic workflow state and `workflow.now()`."""

from __future__ import annotations

from datetime import timedelta
from typing import NoReturn

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts import errors
    from turnkeeper.workflows.activity_options import MODEL_CALL_TIMEOUT
    from turnkeeper.workflows.failures import fail
    from turnkeeper.workflows.turn_state import Turn


def check_budgets(turn: Turn) -> None:
    """Fails the turn when its time or cost budget is spent; called before every model call."""
    if time_left_ms(turn) <= 0:
        fail_time_budget(turn)
    left = cost_left(turn)
    if left is not None and left <= 0:
        fail_cost_budget(turn, f"after {turn.llm_calls} model calls")


def cost_left(turn: Turn) -> float | None:
    budget = turn.request.task.constraints.cost_budget_usd
    return None if budget is None else budget - turn.cost_usd


def time_left_ms(turn: Turn) -> float:
    budget = turn.request.task.constraints.time_budget_ms
    if budget is None:
        return float("inf")
    return budget - turn.active_ms(workflow.now())


def has_time_budget(turn: Turn) -> bool:
    return turn.request.task.constraints.time_budget_ms is not None


def model_timeout(turn: Turn) -> timedelta:
    """The time left of the budget, so that no model call can outlive it."""
    left = time_left_ms(turn)
    if left == float("inf"):
        return MODEL_CALL_TIMEOUT
    return max(timedelta(milliseconds=1), min(MODEL_CALL_TIMEOUT, timedelta(milliseconds=left)))


def tool_interactions_left(turn: Turn) -> bool:
    limit = turn.request.task.constraints.max_tool_interactions
    return limit is None or turn.tool_interactions < limit


def fail_cost_budget(turn: Turn, detail: str) -> NoReturn:
    budget = turn.request.task.constraints.cost_budget_usd
    fail(
        turn,
        errors.TURN_BUDGET_EXCEEDED,
        f"cost budget of ${budget:g} spent: ${turn.cost_usd:.6f} so far; {detail}",
    )


def fail_time_budget(turn: Turn) -> NoReturn:
    budget = turn.request.task.constraints.time_budget_ms
    now = workflow.now()
    fail(
        turn,
        errors.TURN_BUDGET_EXCEEDED,
        f"time budget of {budget} ms spent: {turn.active_ms(now)} ms "
        f"(not counting {turn.human.waited_ms(now)} ms waiting for humans)",
    )
