"""Who priced a model call: what a report says of each call's cost, so that a cost nobody
knows is never shown as $0."""

from __future__ import annotations

from typing import Literal

from turnkeeper.contracts.contract_model import ContractModel

CostSource = Literal["price_table", "agent_price", "provider", "unknown"]
"""`price_table`: the runtime's pricing table; `agent_price`: the request's own price (`agent.price`,
or a fallback entry's `price`);
`provider`: the endpoint's own report of what it billed (a gateway with `reports_cost`);
`unknown`: nobody (the call is not in `cost_usd`)."""


class PricedCall(ContractModel):
    """One model call's cost, and who priced it."""

    iteration: int
    """The iteration the call belongs to (0: a compaction summary before the first)."""
    model: str
    """The `provider:model` that answered."""
    cost_usd: float | None
    """What the call cost; None when nobody knows (`priced_by: unknown`)."""
    priced_by: CostSource
    """Where the cost comes from."""
