"""A pausing turn's wait for a budget extension (what it returns, how it fails, what it tells
the observer), and why an `extend_budget` update must not apply, for every reason decided before
signatures (those are in test_signed_decisions.py)."""

from __future__ import annotations

from typing import Any, cast

import pytest
from temporalio.exceptions import ApplicationError
from turnkeeper.contracts import errors
from turnkeeper.contracts.budget_extension import BudgetKind, ExtendBudgetInput
from turnkeeper.workflows.budgets.checks import BudgetExhausted
from turnkeeper.workflows.budgets.extension import BudgetExtensions, extension_problem
from turnkeeper.workflows.observation.turn_observer import TurnObserver
from turnkeeper.workflows.turn_state import Turn

from tests.unit.builders import START, constraints, request, turn
from tests.unit.workflow_clock import WorkflowClock


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


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> WorkflowClock:
    return WorkflowClock(monkeypatch, START)


def test_an_extension_of_the_spent_budget_applies(clock: WorkflowClock) -> None:
    assert problem(waiting("iterations"), iterations=2, approver="anyone") is None
    assert problem(waiting("cost", cost_budget_usd=1), cost_usd=0.5) is None


class Observer:
    """What the wait tells the turn's observer (records, events, the status), in order."""

    def __init__(self) -> None:
        self.told: list[tuple[str, Any]] = []

    def budget_exhausted(self, turn: Turn, request: Any) -> None:
        self.told.append(("exhausted", (request.number, request.budget, request.message)))

    def budget_wait_ended(self, turn: Turn) -> None:
        self.told.append(("wait ended", None))

    def budget_extended(self, turn: Turn, granted: Any) -> None:
        self.told.append(("extended", (granted.request, granted.iterations)))


SPENT = BudgetExhausted("iterations", errors.TURN_BUDGET_EXCEEDED, "max_iterations=10 reached")
NO_TOOLS_LEFT = BudgetExhausted("tool_interactions", "", "tool interaction budget of 1 spent")


def pausing(**limits: Any) -> Turn:
    return turn(request(task=constraints(on_budget_exhausted="pause", **limits)))


def grant(t: Turn, clock: WorkflowClock, iterations: int) -> None:
    t.grant_extension(ExtendBudgetInput(iterations=iterations), signed=False, now=clock.now)


async def wait(t: Turn, exhausted: BudgetExhausted, observer: Observer) -> bool:
    return await BudgetExtensions(cast(TurnObserver, observer)).await_extension(t, exhausted)


async def test_an_extension_in_time_ends_the_wait_and_is_announced(clock: WorkflowClock) -> None:
    t, observer = pausing(approval_timeout_s=60), Observer()
    clock.meanwhile(30, lambda: grant(t, clock, iterations=2))
    assert await wait(t, SPENT, observer) is True

    clock.meanwhile(10, lambda: grant(t, clock, iterations=5))
    assert await wait(t, SPENT, observer) is True

    assert observer.told == [
        ("exhausted", (1, "iterations", "max_iterations=10 reached")),
        ("extended", (1, 2)),
        ("exhausted", (2, "iterations", "max_iterations=10 reached")),
        ("extended", (2, 5)),
    ]
    assert t.budget.budget_request is None
    assert t.human.waited_ms(clock.now) == 40_000  # not counted against the time budget


async def test_without_an_extension_in_time_the_turn_fails_with_the_budget_s_error(
    clock: WorkflowClock,
) -> None:
    t, observer = pausing(approval_timeout_s=60), Observer()
    clock.meanwhile(61, lambda: grant(t, clock, iterations=2))

    with pytest.raises(ApplicationError) as failed:
        await wait(t, SPENT, observer)

    assert failed.value.type == errors.TURN_BUDGET_EXCEEDED
    assert failed.value.message == (
        "max_iterations=10 reached; no budget extension came within 60 s"
    )
    assert observer.told[1:] == [("wait ended", None)]
    assert t.budget.budget_request is None
    assert t.human.waited_ms(clock.now) == 60_000  # the late extension came after the timeout


async def test_without_more_tool_interactions_in_time_the_turn_goes_on(
    clock: WorkflowClock,
) -> None:
    t, observer = pausing(approval_timeout_s=60, max_tool_interactions=1), Observer()

    assert await wait(t, NO_TOOLS_LEFT, observer) is False

    assert observer.told[1:] == [("wait ended", None)]
    assert t.budget.budget_request is None
    assert t.human.waited_ms(clock.now) == 60_000


def extensions(observer: Observer) -> BudgetExtensions:
    return BudgetExtensions(cast(TurnObserver, observer))


async def test_a_step_stopped_by_a_spent_budget_runs_again_once_extended(
    clock: WorkflowClock,
) -> None:
    t, observer = pausing(approval_timeout_s=60), Observer()
    runs: list[int] = []

    async def step() -> str:
        runs.append(len(runs))
        if len(runs) < 3:
            clock.meanwhile(5, lambda: grant(t, clock, iterations=1))
            raise SPENT
        return "answered"

    assert await extensions(observer).retrying(t, step) == "answered"
    assert runs == [0, 1, 2]
    assert [told for told, _ in observer.told] == ["exhausted", "extended"] * 2


async def test_a_check_whose_budget_goes_on_unextended_is_not_asked_again(
    clock: WorkflowClock,
) -> None:
    t, observer = pausing(approval_timeout_s=60, max_tool_interactions=1), Observer()
    checks: list[Turn] = []

    def check(checked: Turn) -> None:
        checks.append(checked)
        raise NO_TOOLS_LEFT

    await extensions(observer).checking(t, check)  # returns after the wait times out

    assert checks == [t]
    assert observer.told[1:] == [("wait ended", None)]
