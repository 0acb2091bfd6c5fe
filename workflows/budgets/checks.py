"""The turn's budgets, read off deterministic workflow state and `workflow.now()`. Each limit is
the request's plus every extension a human granted (contracts/budget_extension.py)."""

from __future__ import annotations

from datetime import timedelta
from typing import NoReturn

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts import errors
    from turnkeeper.contracts.budget_extension import BudgetKind, BudgetLimits
    from turnkeeper.workflows.activity_options import MODEL_CALL_TIMEOUT
    from turnkeeper.workflows.failures import fail
    from turnkeeper.workflows.turn_state import Turn


class BudgetExhausted(Exception):
    """Raised instead of failing the turn when it pauses for a budget extension; the loop
    catches it, waits for a human, and fails with `error_type` and `message` if none comes."""

    def __init__(self, budget: BudgetKind, error_type: str, message: str) -> None:
        super().__init__(message)
        self.budget = budget
        self.error_type = error_type
        self.message = message


def pauses(turn: Turn) -> bool:
    """Whether the turn waits for an extension instead of failing when a budget is spent."""
    return turn.request.task.constraints.on_budget_exhausted == "pause"


def exhaust(turn: Turn, budget: BudgetKind, error_type: str, message: str) -> NoReturn:
    """Pauses the turn for an extension of `budget`, or fails it as before."""
    if pauses(turn):
        raise BudgetExhausted(budget, error_type, message)
    fail(turn, error_type, message)


def limits(turn: Turn) -> BudgetLimits:
    constraints = turn.request.task.constraints
    added = _extended(turn)
    return BudgetLimits(
        cost_budget_usd=_plus_usd(constraints.cost_budget_usd, added["cost"]),
        time_budget_ms=_plus(constraints.time_budget_ms, added["time"]),
        max_iterations=turn.request.agent.max_iterations + int(added["iterations"]),
        max_tool_interactions=_plus(constraints.max_tool_interactions, added["tool_interactions"]),
    )


def iteration_limit(turn: Turn) -> int:
    return turn.request.agent.max_iterations + int(_extended(turn)["iterations"])


def _extended(turn: Turn) -> dict[BudgetKind, float]:
    added: dict[BudgetKind, float] = dict.fromkeys(
        ("cost", "time", "iterations", "tool_interactions"), 0
    )
    for extension in turn.budget.budget_extensions:
        added["cost"] += extension.cost_usd or 0
        added["time"] += extension.time_ms or 0
        added["iterations"] += extension.iterations or 0
        added["tool_interactions"] += extension.tool_interactions or 0
    return added


def _plus_usd(limit: float | None, added: float) -> float | None:
    return None if limit is None else limit + added


def _plus(limit: int | None, added: float) -> int | None:
    return None if limit is None else limit + int(added)


def check_iterations(turn: Turn) -> None:
    """Fails a turn whose iterations are spent (a pausing one waits for more): its model still
    asked for tools after the last one."""
    if turn.iteration < iteration_limit(turn):
        return
    still = (
        "the model still asked for tools"
        if turn.rejected is None
        else f"the model's last answer was still rejected ({turn.rejected.why})"
    )
    exhaust(
        turn,
        "iterations",
        errors.MAX_ITERATIONS_EXCEEDED,
        f"the turn reached max_iterations={iteration_limit(turn)} and {still} "
        f"({turn.spend.model_calls} model calls, {turn.spend.tool_calls} tool calls)",
    )


def check_before_call(turn: Turn) -> None:
    """The checks before every model call: time and cost, then the tool interactions."""
    check_budgets(turn)
    check_tool_interactions(turn)


def check_budgets(turn: Turn) -> None:
    """Fails the turn when its time or cost budget is spent; called before every model call."""
    if time_left_ms(turn) <= 0:
        fail_time_budget(turn)
    left = cost_left(turn)
    if left is not None and left <= 0:
        fail_cost_budget(turn, f"after {turn.spend.model_calls} model calls")


def cost_left(turn: Turn) -> float | None:
    budget = limits(turn).cost_budget_usd
    return None if budget is None else budget - turn.spend.cost_usd


def time_left_ms(turn: Turn) -> float:
    budget = limits(turn).time_budget_ms
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
    limit = limits(turn).max_tool_interactions
    return limit is None or turn.spend.tool_interactions < limit


def check_tool_interactions(turn: Turn) -> None:
    """A pausing turn whose model used its last tool interaction waits for more before its next
    call; without an extension that call is made without tools, as for any turn."""
    if not pauses(turn) or tool_interactions_left(turn) or not _answers_tool_calls(turn):
        return
    limit = limits(turn).max_tool_interactions
    raise BudgetExhausted(
        "tool_interactions",
        "",
        f"tool interaction budget of {limit} spent: the next model call would get no tools",
    )


def _answers_tool_calls(turn: Turn) -> bool:
    """Whether the next call carries tool results: the model has just used tools, and would
    use more. After a call without tools (an extension that never came) it is not asked again."""
    last = turn.messages[-1] if turn.messages else None
    return last is not None and any(block.type == "tool_result" for block in last.content)


def fail_cost_budget(turn: Turn, detail: str) -> NoReturn:
    budget = limits(turn).cost_budget_usd
    exhaust(
        turn,
        "cost",
        errors.TURN_BUDGET_EXCEEDED,
        f"cost budget of ${budget:g} spent: ${turn.spend.cost_usd:.6f} so far; {detail}",
    )


def fail_time_budget(turn: Turn) -> NoReturn:
    budget = limits(turn).time_budget_ms
    now = workflow.now()
    exhaust(
        turn,
        "time",
        errors.TURN_BUDGET_EXCEEDED,
        f"time budget of {budget} ms spent: {turn.active_ms(now)} ms "
        f"(not counting {turn.human.waited_ms(now)} ms waiting for humans)",
    )
