"""The cost side of a model call: the check before it (a call whose input alone would cost more
than the turn's budget left is not made, so a turn overspends by at most one call's output) and
the price of its answer, with who priced it."""

from __future__ import annotations

from temporalio.exceptions import ApplicationError
from turnkeeper.activities.providers.provider import ModelProvider, ModelRequest, reports_cost
from turnkeeper.contracts.activity_io import ModelCallInput
from turnkeeper.contracts.call_costs import CostSource
from turnkeeper.contracts.errors import INVALID_TURN_REQUEST, TURN_BUDGET_EXCEEDED
from turnkeeper.contracts.pricing import cost_usd, input_cost_usd, price_for
from turnkeeper.contracts.turn import Usage


async def check_cost_budget(
    call: ModelCallInput, provider: ModelProvider, request: ModelRequest
) -> None:
    """Counts the request's input tokens with the provider when the turn has a cost budget and
    the model a price.

    A model without a price passes only on an endpoint that reports what it billed (the answer
    is then priced by the endpoint, and the turn overspends by at most that one call).

    Raises:
        ApplicationError: TurnBudgetExceeded, not retried: the input alone costs more than the
            budget left. InvalidTurnRequest, not retried: nobody can price the call, so the
            budget could not be enforced.
    """
    left = call.cost_budget_left_usd
    if left is None:
        return
    price = price_for(call.model, call.price)
    if price is None:
        if reports_cost(provider):
            return
        raise ApplicationError(
            f"task.constraints.cost_budget_usd: no price is known for {call.model!r} and its "
            f"endpoint does not report what it bills, so the budget could not be enforced; "
            f"give agent.price, set reports_cost on the endpoint if it reports its cost, or "
            f"drop the budget",
            type=INVALID_TURN_REQUEST,
            non_retryable=True,
        )
    tokens = await provider.count_input_tokens(request)
    cost = input_cost_usd(tokens, price)
    if cost > left:
        raise ApplicationError(
            f"model call {call.iteration} was not made: its input alone (~{tokens} tokens, "
            f"${cost:.6f}) would cost more than the ${left:.6f} left of the cost budget",
            type=TURN_BUDGET_EXCEEDED,
            non_retryable=True,
        )


def answer_cost(
    call: ModelCallInput, usage: Usage, reported_usd: float | None = None
) -> tuple[float, CostSource]:
    """What the answer cost in US dollars, and who priced it: the request's override, else the
    pricing table, else what the endpoint reported billing (only endpoints trusted to report
    it pass `reported_usd`), else nobody (0.0, `unknown`).

    Raises:
        ApplicationError: TurnBudgetExceeded, not retried: the turn has a cost budget and nobody
            priced the answer, so the budget can no longer be enforced.
    """
    if call.price is not None:
        return cost_usd(usage, call.price), "agent_price"
    price = price_for(call.model)
    if price is not None:
        return cost_usd(usage, price), "price_table"
    if reported_usd is not None:
        return reported_usd, "provider"
    if call.cost_budget_left_usd is not None:
        raise ApplicationError(
            f"model call {call.iteration}: {call.model!r} has no price and its endpoint did not "
            f"report what the call billed, so the cost budget can no longer be enforced",
            type=TURN_BUDGET_EXCEEDED,
            non_retryable=True,
        )
    return 0.0, "unknown"
