"""Model prices: `pricing.json` (a data file, so a price change needs no code change), loaded
once at import so that workflow code can consult it without doing I/O, unless the request
brings its own `agent.price`. Cost is usage times price."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Final

from turnkeeper.contracts.turn import AgentSpec, Price, Usage

PRICING_FILE: Final = Path(__file__).with_name("pricing.json")


def _load(path: Path) -> dict[str, Price]:
    raw = json.loads(path.read_text())
    return {model: Price.model_validate(entry) for model, entry in raw.items() if ":" in model}


PRICING_TABLE: Final[dict[str, Price]] = _load(PRICING_FILE)


def price_for(model: str, override: Price | None = None) -> Price | None:
    return override or PRICING_TABLE.get(model)


def unpriced_model(agent: AgentSpec) -> str | None:
    """The first model of `agent`'s fallback chain with no known price (its own `price` counts
    for its first model only), or None when every one has a price."""
    chain = [(agent.model, price_for(agent.model, agent.price))]
    chain += [(model, price_for(model)) for model in agent.fallback_models]
    return next((model for model, price in chain if price is None), None)


def cost_usd(usage: Usage, price: Price) -> float:
    return (
        usage.input_tokens * price.input_per_mtok
        + usage.output_tokens * price.output_per_mtok
        + usage.cache_read_tokens * cache_read_price(price)
        + usage.cache_write_tokens * cache_write_price(price)
    ) / 1_000_000


def input_cost_usd(input_tokens: int, price: Price) -> float:
    return input_tokens * price.input_per_mtok / 1_000_000


def cache_read_price(price: Price) -> float:
    # An override that gives only input and output prices gets Anthropic's usual multiples.
    return (
        price.input_per_mtok * 0.1
        if price.cache_read_per_mtok is None
        else price.cache_read_per_mtok
    )


def cache_write_price(price: Price) -> float:
    if price.cache_write_per_mtok is None:
        return price.input_per_mtok * 1.25
    return price.cache_write_per_mtok
