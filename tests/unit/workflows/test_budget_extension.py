"""Why an `extend_budget` update must not apply, for every reason decided before signatures
(those, and the clock they need, are in test_signed_decisions.py and the server tests)."""

from __future__ import annotations

from typing import Any

from turnkeeper.contracts.budget_extension import BudgetKind, ExtendBudgetInput
from turnkeeper.workflows.budget_extension import extension_problem
from turnkeeper.workflows.turn_state import Turn

from tests.unit.builders import START, constraints, request, turn


def waiting(budget: BudgetKind, agent: dict[str, Any] | None = None, **limits: Any) -> Turn:
    t = turn(request(agent=agent, task=constraints(on_budget_exhausted="pause", **limits)))
    t.request_budget(budget, "spent", START)
    t.state = "awaiting_budget"
    return t


def problem(t: Turn, **payload: Any) -> str | None:
    return extension_problem(t, ExtendBudgetInput.model_validate(payload), "turn-1")


def test_a_turn_that_waits_for_nothing_refuses_an_extension() -> None:
    found = problem(turn(), iterations=1)
    assert found == "the turn is not waiting for a budget extension (state running)"


def test_an_extension_must_add_to_the_budget_that_was_spent() -> None:
    found = problem(waiting("cost", cost_budget_usd=1), iterations=2)
    assert found == "the turn waits for more cost (cost_usd); this extension adds none"
    found = problem(waiting("tool_interactions", max_tool_interactions=1), iterations=2)
    assert found is not None and "more tool interactions (tool_interactions)" in found


def test_an_extension_of_an_unlimited_budget_is_refused() -> None:
    found = problem(waiting("iterations"), iterations=2, time_ms=1000)
    assert found == "time_ms: the turn's time is unlimited"


def test_an_approver_not_on_the_agent_s_list_may_not_extend() -> None:
    t = waiting("iterations", agent={"approvers": ["ann"]})
    found = problem(t, iterations=2, approver="mallory")
    assert found == "'mallory' may not extend budgets of this agent (approvers: ann)"
    found = problem(t, iterations=2)
    assert found is not None and found.startswith("an anonymous approver may not extend")
