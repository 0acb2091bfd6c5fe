"""What an answer costs: every kind of token at its own price, from the request's override or
the pricing table, with Anthropic's usual cache multiples when an override names none."""

from __future__ import annotations

import json

from turnkeeper.contracts.pricing import (
    PRICING_FILE,
    PRICING_TABLE,
    cache_read_price,
    cache_write_price,
    cost_usd,
    input_cost_usd,
    price_for,
)
from turnkeeper.contracts.turn import Price, Usage

# Prices and counts whose products are exact in binary floating point, so that a cost is
# compared exactly: a wrong operator or a divisor off by one changes the result.
PRICE = Price(
    input_per_mtok=1.5, output_per_mtok=2.5, cache_read_per_mtok=0.25, cache_write_per_mtok=4
)


def test_each_kind_of_token_costs_its_own_price() -> None:
    usage = Usage(
        input_tokens=2_000_000,
        output_tokens=3_000_000,
        cache_read_tokens=4_000_000,
        cache_write_tokens=1_000_000,
    )
    # 2 x $1.5 + 3 x $2.5 + 4 x $0.25 + 1 x $4
    assert cost_usd(usage, PRICE) == 15.5


def test_a_few_tokens_cost_a_fraction_of_the_price_per_million() -> None:
    assert cost_usd(Usage(output_tokens=1_000), PRICE) == 0.0025
    assert cost_usd(Usage(), PRICE) == 0.0


def test_the_input_alone_costs_its_tokens_at_the_input_price() -> None:
    assert input_cost_usd(1_250_000, PRICE) == 1.875
    assert input_cost_usd(1_000, Price(input_per_mtok=2, output_per_mtok=8)) == 0.002


def test_an_override_without_cache_prices_gets_the_usual_multiples_of_its_input_price() -> None:
    override = Price(input_per_mtok=2, output_per_mtok=8)

    assert cache_read_price(override) == 0.2  # a tenth
    assert cache_write_price(override) == 2.5  # a quarter more
    usage = Usage(cache_read_tokens=1_000_000, cache_write_tokens=2_000_000)
    assert cost_usd(usage, override) == 5.2


def test_cache_prices_that_are_given_are_used_even_when_zero() -> None:
    free_cache = Price(
        input_per_mtok=2, output_per_mtok=8, cache_read_per_mtok=0, cache_write_per_mtok=0
    )

    assert (cache_read_price(free_cache), cache_write_price(free_cache)) == (0.0, 0.0)
    assert (cache_read_price(PRICE), cache_write_price(PRICE)) == (0.25, 4.0)


def test_a_request_s_price_overrides_the_table() -> None:
    assert price_for("anthropic:claude-sonnet-4-6", PRICE) == PRICE
    assert price_for("local:qwen3-8b", PRICE) == PRICE


def test_without_an_override_the_table_prices_a_known_model_only() -> None:
    assert price_for("anthropic:claude-sonnet-4-6") == Price(
        input_per_mtok=3.0, output_per_mtok=15.0, cache_read_per_mtok=0.3, cache_write_per_mtok=3.75
    )
    assert price_for("local:qwen3-8b") is None


def test_the_table_holds_every_model_of_the_pricing_file_and_nothing_else() -> None:
    in_file = json.loads(PRICING_FILE.read_text())

    assert set(PRICING_TABLE) == {name for name in in_file if not name.startswith("_")}
    assert all(":" in model for model in PRICING_TABLE)
