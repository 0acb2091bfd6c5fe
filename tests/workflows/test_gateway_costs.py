"""Turns on a gateway endpoint (`reports_cost`, `cache_control`) whose models the pricing table
lacks: priced by what the gateway reports, a budget that runs on it, an unknown cost never shown
as $0, cache breakpoints sent and cache writes priced apart. The real dev server, the real
`openai` SDK, the fake Chat Completions API over HTTP."""

from __future__ import annotations

from typing import Any

import pytest
from turnkeeper.contracts.errors import INVALID_TURN_REQUEST, TURN_BUDGET_EXCEEDED

from tests.conftest import GATEWAY, TurnRunner, failure_of, new_key, scripted_request
from tests.fakes import fake_anthropic as anthropic
from tests.fakes import openai_replies as openai

CLAUDE_BEHIND_GATEWAY = f"{GATEWAY}:claude-sonnet-via-gateway"  # no price in the table


def on_gateway(key: str, task: dict[str, Any] | None = None, **agent: Any) -> dict[str, Any]:
    return scripted_request(key, agent={"model": CLAUDE_BEHIND_GATEWAY, **agent}, task=task or {})


async def test_a_budget_runs_on_a_model_the_gateway_prices(turns: TurnRunner) -> None:
    assert turns.openai is not None
    key = new_key()
    turns.openai.script(
        key,
        [
            openai.tool_calls(("list_files", {"path": "."}), cost=0.0031),
            openai.text("Nothing there.", cost=0.0042),
        ],
    )
    budget = {"constraints": {"cost_budget_usd": 1.0}}

    report = await turns.run(on_gateway(key, budget, stream=True))

    assert report.output == "Nothing there."
    assert report.cost_usd == pytest.approx(0.0073)
    assert [(c.iteration, c.priced_by, c.cost_usd) for c in report.priced_calls] == [
        (1, "provider", 0.0031),
        (2, "provider", 0.0042),
    ]
    assert report.unpriced_calls == 0


async def test_an_unknown_cost_is_said_never_shown_as_zero(turns: TurnRunner) -> None:
    assert turns.openai is not None
    key = new_key()
    turns.openai.script(key, [openai.text("An answer nobody priced.")])

    report = await turns.run(on_gateway(key))

    assert report.unpriced_calls == 1
    [call] = report.priced_calls
    assert (call.priced_by, call.cost_usd, call.model) == ("unknown", None, CLAUDE_BEHIND_GATEWAY)


async def test_a_budget_stops_where_the_gateway_leaves_a_cost_out(turns: TurnRunner) -> None:
    assert turns.openai is not None
    key = new_key()
    turns.openai.script(key, [openai.text("An answer nobody priced.")])

    error, partial = await failure_of(
        turns, on_gateway(key, {"constraints": {"cost_budget_usd": 1.0}})
    )

    assert error.type == TURN_BUDGET_EXCEEDED
    assert "did not report what the call billed" in error.message
    assert partial.llm_calls == 0


async def test_a_budget_on_an_unpriced_model_of_an_endpoint_that_does_not_report_is_refused(
    turns: TurnRunner,
) -> None:
    key = new_key()
    request = scripted_request(
        key,
        agent={"model": "openai:model-with-no-price"},
        task={"constraints": {"cost_budget_usd": 1.0}},
    )

    error, _ = await failure_of(turns, request)

    assert error.type == INVALID_TURN_REQUEST
    assert "no price is known for 'openai:model-with-no-price'" in error.message


async def test_cache_breakpoints_go_to_the_gateway_and_writes_are_priced_apart(
    turns: TurnRunner,
) -> None:
    assert turns.openai is not None
    key = new_key()
    turns.openai.script(
        key,
        [
            openai.tool_calls(("list_files", {"path": "."})),
            openai.text("Done.", cached_tokens=20, cache_write_tokens=30),
        ],
    )

    report = await turns.run(on_gateway(key))

    sent = turns.openai.requests_for(key)[-1].body
    marked = [
        message["role"]
        for message in sent["messages"]
        if isinstance(message["content"], list)
        and any("cache_control" in part for part in message["content"])
    ]
    assert marked == ["system", "user", "tool"]
    assert sent["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert (report.usage.cache_read_tokens, report.usage.cache_write_tokens) == (20, 30)


async def test_a_fallback_entry_s_own_price_prices_its_answers(turns: TurnRunner) -> None:
    assert turns.openai is not None
    key = new_key()
    turns.fake.script(key, [anthropic.overloaded()])
    turns.openai.script(key, [openai.text("Answered by the fallback.")])
    price = {"input_per_mtok": 1_000_000, "output_per_mtok": 0}  # $1 per input token
    request = scripted_request(
        key,
        agent={
            "fallback_models": [{"model": "openai:model-with-no-price", "price": price}],
            "fallback_after_attempts": 1,
        },
        task={"constraints": {"cost_budget_usd": 10_000.0}},
    )

    report = await turns.run(request)

    [call] = report.priced_calls
    assert (call.model, call.priced_by) == ("openai:model-with-no-price", "agent_price")
    assert report.cost_usd == pytest.approx(report.usage.input_tokens)
