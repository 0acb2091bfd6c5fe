"""What the console prints of a report's cost: a cost nobody knows is said, never shown as $0."""

from __future__ import annotations

from turnkeeper.contracts.turn import AgentReport

from turnkeeper.console.render import cost_words


def report(cost: float, llm_calls: int, unpriced: int) -> AgentReport:
    return AgentReport(
        agent_id="a", task_id="t", outcome="completed", cost_usd=cost, llm_calls=llm_calls,
        unpriced_calls=unpriced,
    )  # fmt: skip


def test_a_priced_turn_shows_its_cost() -> None:
    assert cost_words(report(0.0123, 3, 0), 4) == "$0.0123"


def test_a_turn_with_some_calls_nobody_priced_says_how_many() -> None:
    assert cost_words(report(0.0123, 3, 1), 4) == "$0.0123 + 1 call of unknown cost"
    assert cost_words(report(0.0123, 3, 2), 4) == "$0.0123 + 2 calls of unknown cost"


def test_a_turn_nobody_priced_has_an_unknown_cost_not_zero() -> None:
    words = cost_words(report(0.0, 2, 2), 6)

    assert words.startswith("unknown") and "$" not in words
