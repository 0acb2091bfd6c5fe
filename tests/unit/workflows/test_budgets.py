"""Budgets read off the turn's state: limits with extensions, what is left, and when a pausing
turn stops for a human. The parts that read `workflow.now()` are left to the server tests."""

from __future__ import annotations

from typing import Any

import pytest
from turnkeeper.contracts import errors
from turnkeeper.contracts.budget_extension import BudgetExtension
from turnkeeper.contracts.messages import Message, TextBlock, ToolResultBlock
from turnkeeper.workflows import budgets
from turnkeeper.workflows.activity_options import MODEL_CALL_TIMEOUT
from turnkeeper.workflows.turn_state import Turn

from tests.unit.builders import START, constraints, request, turn


def a_turn(**limits: Any) -> Turn:
    return turn(request(task=constraints(**limits)))


def extended(t: Turn, **amounts: Any) -> Turn:
    number = len(t.budget_extensions) + 1
    t.budget_extensions.append(BudgetExtension(request=number, budget="cost", at=START, **amounts))
    return t


def test_without_extensions_the_limits_are_the_request_s() -> None:
    limits = budgets.limits(
        a_turn(cost_budget_usd=0.5, time_budget_ms=1000, max_tool_interactions=2)
    )
    assert (limits.cost_budget_usd, limits.time_budget_ms) == (0.5, 1000)
    assert (limits.max_iterations, limits.max_tool_interactions) == (10, 2)


def test_every_extension_adds_to_its_own_budget() -> None:
    t = a_turn(cost_budget_usd=0.5, time_budget_ms=1000, max_tool_interactions=2)
    extended(t, cost_usd=0.25, iterations=3)
    extended(t, time_ms=500, tool_interactions=1, cost_usd=0.25)
    limits = budgets.limits(t)
    assert (limits.cost_budget_usd, limits.time_budget_ms) == (1.0, 1500)
    assert (limits.max_iterations, limits.max_tool_interactions) == (13, 3)
    assert budgets.iteration_limit(t) == 13


def test_an_extension_never_limits_an_unlimited_budget() -> None:
    limits = budgets.limits(extended(a_turn(), cost_usd=1.0, time_ms=10, tool_interactions=1))
    assert (limits.cost_budget_usd, limits.time_budget_ms, limits.max_tool_interactions) == (
        None,
        None,
        None,
    )


def test_cost_left_counts_down_from_the_extended_budget() -> None:
    t = a_turn(cost_budget_usd=0.5)
    assert budgets.cost_left(a_turn()) is None
    t.cost_usd = 0.4
    assert budgets.cost_left(t) == pytest.approx(0.1)
    extended(t, cost_usd=0.5)
    assert budgets.cost_left(t) == pytest.approx(0.6)


def test_a_spent_cost_budget_pauses_a_pausing_turn_with_the_figures() -> None:
    t = a_turn(cost_budget_usd=0.5, on_budget_exhausted="pause")
    t.cost_usd, t.model_calls = 0.5, 4
    with pytest.raises(budgets.BudgetExhausted) as raised:
        budgets.check_budgets(t)
    assert raised.value.budget == "cost"
    assert raised.value.error_type == errors.TURN_BUDGET_EXCEEDED
    assert raised.value.message.startswith("cost budget of $0.5 spent: $0.500000 so far")
    assert raised.value.message.endswith("after 4 model calls")


def test_a_budget_with_money_left_lets_the_call_go() -> None:
    t = a_turn(cost_budget_usd=0.5, on_budget_exhausted="pause")
    t.cost_usd = 0.49
    budgets.check_budgets(t)
    budgets.check_budgets(a_turn())


def test_without_a_time_budget_a_model_call_gets_the_full_timeout() -> None:
    assert budgets.time_left_ms(a_turn()) == float("inf")
    assert budgets.model_timeout(a_turn()) == MODEL_CALL_TIMEOUT
    assert not budgets.has_time_budget(a_turn())
    assert budgets.has_time_budget(a_turn(time_budget_ms=10))


def test_tool_interactions_left_counts_extensions() -> None:
    t = a_turn(max_tool_interactions=1)
    assert budgets.tool_interactions_left(t)
    t.tool_interactions = 1
    assert not budgets.tool_interactions_left(t)
    assert budgets.tool_interactions_left(extended(t, tool_interactions=1))
    assert budgets.tool_interactions_left(a_turn())


def answered_tools(t: Turn) -> Turn:
    t.messages.append(
        Message(role="user", content=[ToolResultBlock(tool_use_id="a", content="ok")])
    )
    return t


def test_a_pausing_turn_out_of_tool_interactions_stops_before_answering_tool_results() -> None:
    t = answered_tools(a_turn(max_tool_interactions=1, on_budget_exhausted="pause"))
    t.tool_interactions = 1
    with pytest.raises(budgets.BudgetExhausted) as raised:
        budgets.check_tool_interactions(t)
    assert raised.value.budget == "tool_interactions"
    assert "tool interaction budget of 1 spent" in raised.value.message


def test_a_failing_turn_out_of_tool_interactions_goes_on_without_tools() -> None:
    t = answered_tools(a_turn(max_tool_interactions=1))
    t.tool_interactions = 1
    budgets.check_tool_interactions(t)


def test_a_turn_not_answering_tool_results_is_not_asked_again() -> None:
    t = a_turn(max_tool_interactions=1, on_budget_exhausted="pause")
    t.tool_interactions = 1
    t.messages.append(Message(role="user", content=[TextBlock(text="go on")]))
    budgets.check_tool_interactions(t)


def test_pauses_follows_on_budget_exhausted() -> None:
    assert budgets.pauses(a_turn(on_budget_exhausted="pause"))
    assert not budgets.pauses(a_turn())
