"""`TURNKEEPER_RATE_LIMITS`: what parses, each wrong entry refused by name, and which key a model
counts against."""

from __future__ import annotations

import pytest
from turnkeeper.contracts.rate_limits import (
    RateLimit,
    RateLimitConfigError,
    limit_key,
    parse_rate_limits,
    rate_limiter_id,
)


def test_parses_model_and_provider_entries() -> None:
    limits = parse_rate_limits(
        '{"anthropic:claude-sonnet-4-6": {"requests_per_minute": 50, '
        '"input_tokens_per_minute": 40000, "output_tokens_per_minute": 8000}, '
        '"openai:*": {"requests_per_minute": 10}}'
    )
    assert limits["anthropic:claude-sonnet-4-6"] == RateLimit(
        requests_per_minute=50, input_tokens_per_minute=40000, output_tokens_per_minute=8000
    )
    assert limits["openai:*"] == RateLimit(requests_per_minute=10)


@pytest.mark.parametrize("text", [None, "", "  ", "{}"])
def test_unset_or_empty_is_no_limit(text: str | None) -> None:
    assert parse_rate_limits(text) == {}


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("{not json", "is not JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('{"claude": {"requests_per_minute": 1}}', "entry 'claude': the key must be"),
        ('{"anthropic:": {"requests_per_minute": 1}}', "entry 'anthropic:'"),
        ('{":model": {"requests_per_minute": 1}}', "entry ':model'"),
        ('{"*:*": {"requests_per_minute": 1}}', "entry '*:*'"),
        ('{"demo:*": 50}', "entry 'demo:*': must be a JSON object"),
        ('{"demo:*": {}}', "entry 'demo:*': names no limit"),
        ('{"demo:*": {"requests_per_minute": 0}}', "entry 'demo:*': requests_per_minute"),
        ('{"demo:*": {"requests_per_minute": -5}}', "entry 'demo:*': requests_per_minute"),
        ('{"demo:*": {"requests_per_minute": 1.5}}', "positive whole number"),
        ('{"demo:*": {"requests_per_minute": "50"}}', "positive whole number"),
        ('{"demo:*": {"requests_per_minute": true}}', "positive whole number"),
        ('{"demo:*": {"requests_per_minute": null}}', "positive whole number"),
        ('{"demo:*": {"requests_per_hour": 5}}', "entry 'demo:*': requests_per_hour"),
    ],
)
def test_each_bad_entry_is_refused_by_name(text: str, says: str) -> None:
    with pytest.raises(RateLimitConfigError, match="TURNKEEPER_RATE_LIMITS") as raised:
        parse_rate_limits(text)
    assert says in str(raised.value)


def test_a_model_counts_against_its_own_entry_before_its_providers() -> None:
    limits = parse_rate_limits(
        '{"anthropic:claude-sonnet-4-6": {"requests_per_minute": 5}, '
        '"anthropic:*": {"requests_per_minute": 50}}'
    )
    assert limit_key(limits, "anthropic:claude-sonnet-4-6") == "anthropic:claude-sonnet-4-6"
    assert limit_key(limits, "anthropic:claude-haiku-4-5") == "anthropic:*"
    assert limit_key(limits, "openai:gpt-4.1") is None
    assert limit_key({}, "demo:echo") is None


def test_ledger_id_names_the_key() -> None:
    assert rate_limiter_id("anthropic:*") == "rate-limit-anthropic:*"
