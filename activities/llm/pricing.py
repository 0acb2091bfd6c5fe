"""Cost of a model call: usage times price, with prices from `pricing.json` (a data file, so a price
change needs no code change) unless the request brings its own `agent.price`."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from contracts.turn import Price, Usage

_TABLE = Path(__file__).with_name("pricing.json")


@cache
def pricing_table() -> dict[str, Price]:
    raw = json.loads(_TABLE.read_text())
    return {model: Price.model_validate(entry) for model, entry in raw.items() if ":" in model}


def price_for(model: str, override: Price | None = None) -> Price | None:
    return override or pricing_table().get(model)


def cost_usd(usage: Usage, price: Price) -> float:
    # Cache prices default to the conventional multiples of the input price (0.1x read,
    # 1.25x write) when an override gives only input and output prices.
    cache_read = price.cache_read_per_mtok
    cache_write = price.cache_write_per_mtok
    if cache_read is None:
        cache_read = price.input_per_mtok * 0.1
    if cache_write is None:
        cache_write = price.input_per_mtok * 1.25
    total = (
        usage.input_tokens * price.input_per_mtok
        + usage.output_tokens * price.output_per_mtok
        + usage.cache_read_tokens * cache_read
        + usage.cache_write_tokens * cache_write
    )
    return total / 1_000_000
