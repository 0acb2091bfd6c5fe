"""The cost check before a model call and the price of its answer, counted by the demo provider
(four characters a token)."""

from __future__ import annotations

import pytest
from temporalio.exceptions import ApplicationError
from turnkeeper.activities.llm.cost_check import answer_cost, check_cost_budget
from turnkeeper.activities.providers.demo_provider import DemoProvider
from turnkeeper.activities.providers.provider import ModelRequest, estimate_input_tokens
from turnkeeper.contracts.errors import INVALID_TURN_REQUEST, TURN_BUDGET_EXCEEDED
from turnkeeper.contracts.messages import Message, TextBlock
from turnkeeper.contracts.turn import Price, Usage

from tests.unit.activities.llm.steps import call

REQUEST = ModelRequest(
    model="workspace-summarizer",
    messages=[Message(role="user", content=[TextBlock(text="x" * 4000)])],
    max_tokens=1024,
)
# $1 per million input tokens: the request's ~1,000 tokens cost about $0.001.
PRICE = Price(input_per_mtok=1.0, output_per_mtok=2.0)
INPUT_COST = estimate_input_tokens(REQUEST) / 1_000_000


async def test_a_call_whose_input_costs_more_than_the_budget_left_is_not_made() -> None:
    budget_left = INPUT_COST / 2

    with pytest.raises(ApplicationError) as refused:
        await check_cost_budget(
            call(iteration=3, price=PRICE, cost_budget_left_usd=budget_left),
            DemoProvider(),
            REQUEST,
        )

    assert refused.value.type == TURN_BUDGET_EXCEEDED
    assert refused.value.non_retryable
    assert refused.value.message.startswith("model call 3 was not made")
    assert f"~{estimate_input_tokens(REQUEST)} tokens" in refused.value.message


class ReportingCost(DemoProvider):
    """An endpoint configured with `reports_cost` (a gateway that says what it billed)."""

    reports_cost = True


@pytest.mark.parametrize(
    ("price", "budget_left", "provider"),
    [
        (PRICE, INPUT_COST * 2, DemoProvider()),
        (PRICE, INPUT_COST, DemoProvider()),
        (PRICE, None, DemoProvider()),
        (None, None, DemoProvider()),
        (None, 0.0, ReportingCost()),
    ],
    ids=[
        "the budget covers the input",
        "the input costs exactly what is left",
        "no cost budget",
        "a model without a price and no budget",
        "a model without a price on an endpoint that reports its cost",
    ],
)
async def test_a_call_within_the_budget_or_without_one_goes_ahead(
    price: Price | None, budget_left: float | None, provider: DemoProvider
) -> None:
    # A model with no known price (the request names no override, the table has no such model).
    model = "gw:no-such-model" if price is None else "demo:workspace-summarizer"
    checked = call(model=model, price=price, cost_budget_left_usd=budget_left)

    await check_cost_budget(checked, provider, REQUEST)


async def test_a_budget_on_a_model_nobody_prices_is_refused_before_the_call() -> None:
    checked = call(model="gw:no-such-model", cost_budget_left_usd=5.0)

    with pytest.raises(ApplicationError) as refused:
        await check_cost_budget(checked, DemoProvider(), REQUEST)

    assert (refused.value.type, refused.value.non_retryable) == (INVALID_TURN_REQUEST, True)
    assert "no price is known for 'gw:no-such-model'" in refused.value.message
    assert "reports_cost" in refused.value.message


def test_an_answer_costs_its_tokens_at_the_request_s_price() -> None:
    usage = Usage(input_tokens=1_000_000, output_tokens=500_000)

    cost, priced_by = answer_cost(call(price=PRICE), usage, reported_usd=9.0)

    assert (cost, priced_by) == (pytest.approx(1.0 + 1.0), "agent_price")


def test_an_answer_costs_its_tokens_at_the_table_s_price() -> None:
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000)

    cost, priced_by = answer_cost(call(model="anthropic:claude-sonnet-4-6"), usage, 9.0)

    assert (cost, priced_by) == (pytest.approx(18.0), "price_table")


def test_an_answer_the_table_lacks_costs_what_the_endpoint_reported() -> None:
    usage = Usage(input_tokens=1_000, output_tokens=1_000)

    assert answer_cost(call(model="gw:no-such-model"), usage, 0.0042) == (0.0042, "provider")
    assert answer_cost(call(model="gw:no-such-model"), usage, 0.0) == (0.0, "provider")


def test_an_answer_nobody_prices_has_an_unknown_cost() -> None:
    usage = Usage(input_tokens=1_000, output_tokens=1_000)

    assert answer_cost(call(model="anthropic:no-such-model"), usage) == (0.0, "unknown")


def test_an_unpriced_answer_under_a_budget_stops_the_turn() -> None:
    usage = Usage(input_tokens=1_000, output_tokens=1_000)
    checked = call(iteration=4, model="gw:no-such-model", cost_budget_left_usd=1.0)

    with pytest.raises(ApplicationError) as stopped:
        answer_cost(checked, usage, None)

    assert (stopped.value.type, stopped.value.non_retryable) == (TURN_BUDGET_EXCEEDED, True)
    assert stopped.value.message.startswith("model call 4: 'gw:no-such-model' has no price")
