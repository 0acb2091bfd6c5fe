"""Budgets read off the turn's state: limits with extensions, what is left, and when a pausing
turn stops for a human. The time budget reads the workflow's clock: tests/unit/workflow_clock.py
sets it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError
from turnkeeper.contracts import errors
from turnkeeper.contracts.budget_extension import BudgetExtension, BudgetKind, ExtendBudgetInput
from turnkeeper.contracts.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from turnkeeper.workflows.activity_options import MODEL_CALL_TIMEOUT
from turnkeeper.workflows.budgets import checks as budgets
from turnkeeper.workflows.turn_state import Turn

from tests.unit.builders import START, constraints, request, turn
from tests.unit.workflow_clock import WorkflowClock


def a_turn(**limits: Any) -> Turn:
    return turn(request(task=constraints(**limits)))


def extended(t: Turn, **amounts: Any) -> Turn:
    number = len(t.budget.budget_extensions) + 1
    t.budget.budget_extensions.append(
        BudgetExtension(request=number, budget="cost", at=START, **amounts)
    )
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
    t.spend.cost_usd = 0.4
    assert budgets.cost_left(t) == pytest.approx(0.1)
    extended(t, cost_usd=0.5)
    assert budgets.cost_left(t) == pytest.approx(0.6)


def test_a_spent_cost_budget_pauses_a_pausing_turn_with_the_figures() -> None:
    t = a_turn(cost_budget_usd=0.5, on_budget_exhausted="pause")
    t.spend.cost_usd, t.spend.model_calls = 0.5, 4
    with pytest.raises(budgets.BudgetExhausted) as raised:
        budgets.check_budgets(t)
    assert raised.value.budget == "cost"
    assert raised.value.error_type == errors.TURN_BUDGET_EXCEEDED
    assert raised.value.message.startswith("cost budget of $0.5 spent: $0.500000 so far")
    assert raised.value.message.endswith("after 4 model calls")


def test_a_budget_with_money_left_lets_the_call_go() -> None:
    t = a_turn(cost_budget_usd=0.5, on_budget_exhausted="pause")
    t.spend.cost_usd = 0.49
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
    t.spend.tool_interactions = 1
    assert not budgets.tool_interactions_left(t)
    assert budgets.tool_interactions_left(extended(t, tool_interactions=1))
    assert budgets.tool_interactions_left(a_turn())


def test_a_model_that_called_a_tool_it_was_not_offered_still_gets_no_tools() -> None:
    t = a_turn(max_tool_interactions=1)
    t.spend.tool_interactions = 2  # it asked for one more anyway: that counts, and gets no tool run

    assert not budgets.tool_interactions_left(t)


def answered_tools(t: Turn) -> Turn:
    """The turn's model asked for a tool in its first answer, and its result is in."""
    asked = ToolUseBlock(id="a", name="read_file", input={"path": "a.md"})
    t.messages.append(Message(role="assistant", content=[TextBlock(text="Reading."), asked]))
    t.messages.append(
        Message(role="user", content=[ToolResultBlock(tool_use_id="a", content="ok")])
    )
    return t


def test_a_pausing_turn_out_of_tool_interactions_stops_before_answering_tool_results() -> None:
    t = answered_tools(a_turn(max_tool_interactions=1, on_budget_exhausted="pause"))
    t.spend.tool_interactions = 1
    with pytest.raises(budgets.BudgetExhausted) as raised:
        budgets.check_tool_interactions(t)
    assert raised.value.budget == "tool_interactions"
    assert "tool interaction budget of 1 spent" in raised.value.message


def test_a_failing_turn_out_of_tool_interactions_goes_on_without_tools() -> None:
    t = answered_tools(a_turn(max_tool_interactions=1))
    t.spend.tool_interactions = 1

    budgets.check_tool_interactions(t)  # no BudgetExhausted: the turn does not stop

    assert t.budget.budget_request is None and t.state == "running"
    # What llm/calls.py offers the next call: no tools.
    assert not budgets.tool_interactions_left(t)


def test_a_turn_not_answering_tool_results_is_not_asked_again() -> None:
    t = a_turn(max_tool_interactions=1, on_budget_exhausted="pause")
    t.spend.tool_interactions = 1
    t.messages.append(Message(role="user", content=[TextBlock(text="go on")]))
    budgets.check_tool_interactions(t)


def test_pauses_follows_on_budget_exhausted() -> None:
    assert budgets.pauses(a_turn(on_budget_exhausted="pause"))
    assert not budgets.pauses(a_turn())


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> WorkflowClock:
    return WorkflowClock(monkeypatch, START)


def granted(
    t: Turn, budget: BudgetKind, clock: WorkflowClock, waited_s: float = 0, **amounts: Any
) -> None:
    """A pausing turn stops for `budget`, and a human grants `amounts` after `waited_s`."""
    t.request_budget(budget, "spent", clock.now)
    clock.advance(s=waited_s)
    t.grant_extension(ExtendBudgetInput(**amounts), signed=False, now=clock.now)


LIMITS = {"cost_budget_usd": 0.5, "time_budget_ms": 1000, "max_tool_interactions": 2}


@pytest.mark.parametrize(
    ("amount", "raised"),
    [
        ({"cost_usd": 0.25}, {"cost_budget_usd": 0.75}),
        ({"time_ms": 500}, {"time_budget_ms": 1500}),
        ({"iterations": 3}, {"max_iterations": 13}),
        ({"tool_interactions": 1}, {"max_tool_interactions": 3}),
    ],
    ids=["cost", "time", "iterations", "tool interactions"],
)
def test_an_extension_raises_only_the_budget_it_names(
    amount: dict[str, Any], raised: dict[str, Any], clock: WorkflowClock
) -> None:
    t = a_turn(on_budget_exhausted="pause", **LIMITS)
    granted(t, "cost", clock, **amount)

    limits = budgets.limits(t).model_dump()

    assert limits == {**LIMITS, "max_iterations": 10, **raised}


def test_extensions_of_the_same_budget_add_up(clock: WorkflowClock) -> None:
    t = a_turn(on_budget_exhausted="pause", **LIMITS)
    granted(t, "time", clock, time_ms=500, tool_interactions=1, iterations=3, cost_usd=0.25)
    granted(t, "time", clock, time_ms=250, tool_interactions=2, iterations=2, cost_usd=0.5)

    limits = budgets.limits(t)

    assert (limits.time_budget_ms, limits.max_tool_interactions) == (1750, 5)
    assert (limits.max_iterations, budgets.iteration_limit(t)) == (15, 15)
    assert limits.cost_budget_usd == 1.25


def test_time_is_enforced_against_the_extended_budget(clock: WorkflowClock) -> None:
    t = a_turn(time_budget_ms=1000, on_budget_exhausted="pause")
    clock.advance(ms=1000)
    with pytest.raises(budgets.BudgetExhausted) as spent:
        budgets.check_budgets(t)
    assert spent.value.budget == "time"
    assert spent.value.message == (
        "time budget of 1000 ms spent: 1000 ms (not counting 0 ms waiting for humans)"
    )

    # The human takes 30 s to grant 500 ms more: the wait does not count against the budget.
    granted(t, "time", clock, waited_s=30, time_ms=500)
    assert budgets.time_left_ms(t) == 500
    budgets.check_budgets(t)
    clock.advance(ms=499)
    budgets.check_budgets(t)

    clock.advance(ms=1)
    with pytest.raises(budgets.BudgetExhausted) as spent_again:
        budgets.check_budgets(t)
    assert spent_again.value.message == (
        "time budget of 1500 ms spent: 1500 ms (not counting 30000 ms waiting for humans)"
    )


def test_a_turn_past_its_time_budget_stops(clock: WorkflowClock) -> None:
    # A tool that ran long takes the turn past the budget before the next check.
    t = a_turn(time_budget_ms=1000, on_budget_exhausted="pause")
    clock.advance(ms=4000)

    with pytest.raises(budgets.BudgetExhausted) as spent:
        budgets.check_budgets(t)

    assert spent.value.message.startswith("time budget of 1000 ms spent: 4000 ms")


def test_a_model_call_never_outlives_the_time_budget(clock: WorkflowClock) -> None:
    t = a_turn(time_budget_ms=1000)
    clock.advance(ms=700)
    assert budgets.model_timeout(t) == timedelta(milliseconds=300)

    # Spent already (the check before the call stops it): the smallest timeout, never a negative.
    clock.advance(ms=600)
    assert budgets.model_timeout(t) == timedelta(milliseconds=1)

    long_budget = a_turn(time_budget_ms=int(MODEL_CALL_TIMEOUT.total_seconds() * 1000) * 2)
    assert budgets.model_timeout(long_budget) == MODEL_CALL_TIMEOUT


def test_a_spent_budget_fails_a_turn_that_does_not_pause(clock: WorkflowClock) -> None:
    t = a_turn(cost_budget_usd=0.5)
    t.spend.cost_usd, t.spend.model_calls = 0.75, 3

    with pytest.raises(ApplicationError) as failed:
        budgets.check_budgets(t)

    assert failed.value.type == errors.TURN_BUDGET_EXCEEDED
    assert failed.value.non_retryable
    assert (
        failed.value.message == "cost budget of $0.5 spent: $0.750000 so far; after 3 model calls"
    )
    (report,) = failed.value.details
    assert report.outcome == "failed"


def test_the_cost_budget_message_names_the_extended_budget(clock: WorkflowClock) -> None:
    t = a_turn(cost_budget_usd=0.5, on_budget_exhausted="pause")
    granted(t, "cost", clock, cost_usd=0.5)
    t.spend.cost_usd, t.spend.model_calls = 1.0, 5

    with pytest.raises(budgets.BudgetExhausted) as spent:
        budgets.check_budgets(t)

    assert spent.value.message == "cost budget of $1 spent: $1.000000 so far; after 5 model calls"


def test_a_tool_interaction_budget_stops_at_its_extended_limit(clock: WorkflowClock) -> None:
    t = answered_tools(a_turn(max_tool_interactions=1, on_budget_exhausted="pause"))
    granted(t, "tool_interactions", clock, tool_interactions=2)
    t.spend.tool_interactions = 2
    budgets.check_tool_interactions(t)

    t.spend.tool_interactions = 3
    with pytest.raises(budgets.BudgetExhausted) as spent:
        budgets.check_tool_interactions(t)

    assert spent.value.message == (
        "tool interaction budget of 3 spent: the next model call would get no tools"
    )
    # No error type: without an extension the turn goes on, its model gets no tools.
    assert spent.value.error_type == ""


def test_spent_iterations_pause_a_pausing_turn_until_an_extension_adds_more() -> None:
    t = a_turn(on_budget_exhausted="pause")
    t.iteration = t.request.agent.max_iterations - 1
    budgets.check_iterations(t)  # one left
    t.iteration += 1
    with pytest.raises(budgets.BudgetExhausted) as spent:
        budgets.check_iterations(t)
    assert spent.value.budget == "iterations"
    assert spent.value.error_type == errors.MAX_ITERATIONS_EXCEEDED
    assert spent.value.message.startswith(f"the turn reached max_iterations={t.iteration} ")
    t.iteration += 1  # past the limit, however it got there: still spent
    with pytest.raises(budgets.BudgetExhausted):
        budgets.check_iterations(t)
    budgets.check_iterations(extended(t, iterations=2))
