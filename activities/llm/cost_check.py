"""The cost side of a model call: the check before it (a call whose input alone would cost more
than the turn's budget left is not made, so a turn overspends by at most one call's output) and
the price of its answer."""

from __future__ import annotations

from temporalio.exceptions import ApplicationError
from turnkeeper.activities.providers.provider import ModelProvider, ModelRequest
from turnkeeper.contracts.activity_io import ModelCallInput
from turnkeeper.contracts.errors import TURN_BUDGET_EXCEEDED
from turnkeeper.contracts.pricing import cost_usd, input_cost_usd, price_for
from turnkeeper.contracts.turn import Usage


async def check_cost_budget(
    call: ModelCallInput, provider: ModelProvider, request: ModelRequest
) -> None:
    """Counts the request's input tokens with the provider when the turn has a cost budget and
    the model a price.

    Raises:
        ApplicationError: TurnBudgetExceeded, not retried: the input alone costs more than the
            budget left.
    """
    left = call.cost_budget_left_usd
    price = price_for(call.model, call.price)
    if left is None or price is None:
        return
    tokens = await provider.count_input_tokens(request)
    cost = input_cost_usd(tokens, price)
    if cost > left:
        raise ApplicationError(
            f"model call {call.iteration} was not made: its input alone (~{tokens} tokens, "
            f"${cost:.6f}) would cost more than the ${left:.6f} left of the cost budget",
            type=TURN_BUDGET_EXCEEDED,
            non_retryable=True,
        )


def answer_cost(call: ModelCallInput, usage: Usage) -> float:
    """What the answer cost in US dollars at the call's price (the request's override, else the
    pricing table); 0.0 for a model without a known price."""
    price = price_for(call.model, call.price)
    return cost_usd(usage, price) if price else 0.0
