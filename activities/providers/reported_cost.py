"""What an endpoint says a call billed. Gateways price every model they route, also the ones
our pricing table lacks: LiteLLM sends the cost in a `x-litellm-response-cost` header and as
`usage.cost` (in its usage object, and in a stream's last chunk); OpenRouter as `usage.cost`.

Read only for endpoints configured with `reports_cost` (`TURNKEEPER_PROVIDERS`): an upstream
API could send a field of that name meaning something else.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Final

COST_HEADER: Final = "x-litellm-response-cost"


def reported_cost_usd(usage: object, headers: Mapping[str, str] | None = None) -> float | None:
    """The call's cost in US dollars from `usage.cost`, else the cost header; None when neither
    holds a finite, non-negative number."""
    in_usage = _cost(getattr(usage, "cost", None))
    if in_usage is not None:
        return in_usage
    return _cost(headers.get(COST_HEADER)) if headers is not None else None


def _cost(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        cost = float(value)
    except ValueError:
        return None
    return cost if math.isfinite(cost) and cost >= 0 else None
