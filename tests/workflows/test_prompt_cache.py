"""Anthropic prompt caching, on by default: where the breakpoints go in what the fake receives,
and what a turn costs when the fake reports cache reads and writes as the API does."""

from __future__ import annotations

import logging
from typing import Any

import pytest
import structlog
from turnkeeper.contracts.pricing import PRICING_TABLE, cost_usd
from turnkeeper.contracts.turn import Usage

from tests.conftest import TurnRunner, new_key, scripted_request
from tests.fakes import fake_anthropic as fake
from tests.fakes.anthropic_cache import MIN_CACHEABLE_TOKENS

SONNET = "anthropic:claude-sonnet-4-6"
# Long enough that tools and system prompt alone reach the minimum cacheable prefix.
LONG_PROMPT = "You keep careful notes. " * (MIN_CACHEABLE_TOKENS // 5)


def breakpoints(body: dict[str, Any]) -> list[str]:
    """Where a request's cache_control marks are: tools.N, system.N, messages.N.M."""
    found = [f"tools.{i}" for i, t in enumerate(body.get("tools", [])) if "cache_control" in t]
    system = body.get("system")
    if isinstance(system, list):
        found += [f"system.{i}" for i, b in enumerate(system) if "cache_control" in b]
    for i, message in enumerate(body["messages"]):
        content = message["content"]
        if isinstance(content, list):
            found += [f"messages.{i}.{j}" for j, b in enumerate(content) if "cache_control" in b]
    return found


def three_iterations() -> list[fake.Step]:
    return [
        fake.tool_calls(("list_files", {"path": "."}), ("list_files", {"path": "."})),
        fake.tool_calls(("list_files", {"path": "."})),
        fake.text("Done."),
    ]


async def test_requests_carry_the_breakpoints_where_they_belong(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(key, three_iterations())

    await turns.run(scripted_request(key))

    first, second, third = (r.body for r in turns.fake.requests_for(key))
    last_tool = f"tools.{len(first['tools']) - 1}"
    assert breakpoints(first) == [last_tool, "system.0", "messages.0.0"]
    # The newest message (two tool results: on the last), and the previous call's newest.
    assert breakpoints(second) == [last_tool, "system.0", "messages.0.0", "messages.2.1"]
    assert breakpoints(third) == [last_tool, "system.0", "messages.2.1", "messages.4.0"]
    assert all(len(breakpoints(r.body)) <= 4 for r in turns.fake.requests_for(key))


async def test_prompt_cache_false_sends_no_breakpoints(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(key, three_iterations(), prompt_cache=True)

    report = await turns.run(scripted_request(key, agent={"prompt_cache": False}))

    assert all(breakpoints(r.body) == [] for r in turns.fake.requests_for(key))
    assert isinstance(turns.fake.requests_for(key)[0].body["system"], str)
    assert (report.usage.cache_read_tokens, report.usage.cache_write_tokens) == (0, 0)


async def test_cache_reads_are_priced_at_the_cache_price(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(key, three_iterations(), prompt_cache=True)
    request = scripted_request(key)
    request["agent"]["system_prompt"] += LONG_PROMPT

    report = await turns.run(request)

    usage = report.usage
    assert usage.cache_read_tokens > 0 and usage.cache_write_tokens > 0
    # Each call after the first reads at least the tools and the system prompt.
    assert usage.cache_read_tokens > 2 * MIN_CACHEABLE_TOKENS
    priced = cost_usd(usage, PRICING_TABLE[SONNET])
    assert abs(report.cost_usd - priced) < 1e-9
    uncached = Usage(
        input_tokens=usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens,
        output_tokens=usage.output_tokens,
    )
    assert report.cost_usd < cost_usd(uncached, PRICING_TABLE[SONNET])
    price = PRICING_TABLE[SONNET]
    assert price.cache_read_per_mtok == price.input_per_mtok / 10


async def test_streamed_calls_report_cache_usage_too(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(key, three_iterations(), prompt_cache=True)
    request = scripted_request(key, agent={"stream": True})
    request["agent"]["system_prompt"] += LONG_PROMPT

    report = await turns.run(request)

    assert report.usage.cache_read_tokens > 0


async def test_the_turn_record_shows_the_cache_hits(
    turns: TurnRunner, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="temporalio.workflow")
    key = new_key()
    turns.fake.script(key, three_iterations(), prompt_cache=True)
    request = scripted_request(key)
    request["agent"]["system_prompt"] += LONG_PROMPT

    with structlog.testing.capture_logs() as activity_log:
        report = await turns.run(request)

    [completed] = [r for r in caplog.records if str(r.msg).startswith("turn_completed")]
    assert completed.cache_read_tokens == report.usage.cache_read_tokens > 0
    assert completed.cache_write_tokens == report.usage.cache_write_tokens > 0
    calls = [e for e in activity_log if e["event"] == "llm_call"]
    assert calls[0]["cache_read_tokens"] == 0 and calls[0]["cache_write_tokens"] > 0
    assert all(call["cache_read_tokens"] > 0 for call in calls[1:])
    assert sum(call["cache_read_tokens"] for call in calls) == report.usage.cache_read_tokens
