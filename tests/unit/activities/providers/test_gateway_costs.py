"""What a gateway reports beside the answer: the cost it billed (`reports_cost`), cache writes
in its usage, and the cache breakpoints it forwards to Claude (`cache_control`); through the real
`openai` SDK against the fake Chat Completions API where a response is involved."""

from __future__ import annotations

from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import pytest
from turnkeeper.activities.providers.openai_messages import (
    with_cache_breakpoints,
    with_cached_tools,
)
from turnkeeper.activities.providers.openai_provider import OpenAICompatibleProvider, usage_of
from turnkeeper.activities.providers.reported_cost import reported_cost_usd
from turnkeeper.contracts.activity_io import ModelCallResult
from turnkeeper.contracts.messages import Message, TextBlock
from turnkeeper.workflows.turn_parts import priced_call

from tests.fakes import openai_replies as fake
from tests.fakes.fake_openai import FakeOpenAI
from tests.unit.activities.providers.openai_requests import new_key, request_for

EPHEMERAL = {"type": "ephemeral"}


def gateway_at(server: FakeOpenAI, **options: bool) -> OpenAICompatibleProvider:
    return OpenAICompatibleProvider(
        "gw", api_key="sk-test-secret", base_url=f"{server.base_url}/v1", **options
    )


@pytest.fixture
async def reporting(openai_server: FakeOpenAI) -> AsyncIterator[OpenAICompatibleProvider]:
    provider = gateway_at(openai_server, reports_cost=True)
    yield provider
    await provider.aclose()


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
async def test_the_reported_cost_rides_with_the_answer(
    openai_server: FakeOpenAI, reporting: OpenAICompatibleProvider, streamed: bool
) -> None:
    key = new_key()
    openai_server.script(key, [fake.text("ok", cost=0.0123)])
    deltas: list[str] = []

    response = await reporting.complete(request_for(key), deltas.append if streamed else None)

    assert response.reported_cost_usd == 0.0123
    assert bool(deltas) is streamed


async def test_an_endpoint_not_trusted_to_report_its_cost_is_not_read(
    openai_server: FakeOpenAI,
) -> None:
    key = new_key()
    openai_server.script(key, [fake.text("ok", cost=0.0123)])
    provider = gateway_at(openai_server)

    response = await provider.complete(request_for(key))
    await provider.aclose()

    assert response.reported_cost_usd is None
    assert provider.reports_cost is False


@pytest.mark.parametrize(
    ("usage", "headers", "cost"),
    [
        (SimpleNamespace(cost=0.5), {"x-litellm-response-cost": "0.7"}, 0.5),
        (SimpleNamespace(), {"x-litellm-response-cost": "0.7"}, 0.7),
        (None, {"x-litellm-response-cost": "1.2e-05"}, 1.2e-05),
        (SimpleNamespace(cost="0.25"), None, 0.25),
        (SimpleNamespace(cost=0), None, 0.0),
        (SimpleNamespace(cost=-1.0), {"x-litellm-response-cost": "nan"}, None),
        (SimpleNamespace(cost=True), {"x-litellm-response-cost": "inf"}, None),
        (SimpleNamespace(cost={"total": 1}), {"x-litellm-response-cost": "free"}, None),
        (None, None, None),
    ],
)
def test_only_a_finite_non_negative_cost_is_read(
    usage: object, headers: dict[str, str] | None, cost: float | None
) -> None:
    assert reported_cost_usd(usage, headers) == cost


def test_cache_writes_a_gateway_reports_are_counted_apart_from_input() -> None:
    details = SimpleNamespace(cached_tokens=100, cache_write_tokens=300)
    openrouter = SimpleNamespace(
        prompt_tokens=1000, completion_tokens=50, prompt_tokens_details=details
    )
    litellm = SimpleNamespace(
        prompt_tokens=1000,
        completion_tokens=50,
        prompt_tokens_details=SimpleNamespace(cached_tokens=100),
        cache_creation_input_tokens=300,
    )

    for usage in (openrouter, litellm):
        counted = usage_of(usage)
        assert (counted.input_tokens, counted.cache_read_tokens) == (600, 100)
        assert (counted.cache_write_tokens, counted.output_tokens) == (300, 50)


def test_breakpoints_mark_the_system_prompt_the_previous_call_and_the_newest_message() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are careful."},
        {"role": "user", "content": "List the files."},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]},
        {"role": "tool", "tool_call_id": "c1", "content": "a.md"},
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
    ]

    marked = with_cache_breakpoints(messages)

    assert marked[0]["content"] == [
        {"type": "text", "text": "You are careful.", "cache_control": EPHEMERAL}
    ]
    assert marked[1]["content"][-1]["cache_control"] == EPHEMERAL
    assert marked[2] == messages[2] and marked[3] == messages[3]
    assert marked[4]["content"] == [
        {"type": "text", "text": "a"},
        {"type": "text", "text": "b", "cache_control": EPHEMERAL},
    ]
    assert messages[0]["content"] == "You are careful."  # the input is not changed


def test_an_answer_that_only_calls_tools_gets_no_breakpoint() -> None:
    only_calls = [{"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]}]

    assert with_cache_breakpoints(only_calls) == only_calls
    assert with_cache_breakpoints([]) == []
    assert with_cached_tools([]) == []
    assert with_cached_tools([{"a": 1}, {"b": 2}]) == [
        {"a": 1},
        {"b": 2, "cache_control": EPHEMERAL},
    ]


async def test_breakpoints_are_sent_only_to_an_endpoint_that_takes_them(
    openai_server: FakeOpenAI,
) -> None:
    for cache_control, marked in ((True, True), (False, False)):
        key = new_key()
        openai_server.script(key, [fake.text("ok")])
        provider = gateway_at(openai_server, cache_control=cache_control)
        request = request_for(key).model_copy(update={"prompt_cache": True})

        await provider.complete(request)
        await provider.aclose()

        body = openai_server.requests_for(key)[0].body
        assert ("cache_control" in str(body["messages"])) is marked
        assert ("cache_control" in str(body["tools"])) is marked


def result(cost: float, priced_by: str = "") -> ModelCallResult:
    return ModelCallResult.model_validate(
        {
            "message": Message(role="assistant", content=[TextBlock(text="x")]),
            "stop_reason": "end_turn",
            "usage": {},
            "cost_usd": cost,
            "priced_by": priced_by,
            "model": "gw:m",
            "conversation_ref": "ref",
            "duration_ms": 1,
        }
    )


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (result(0.25, "provider"), ("provider", 0.25)),
        (result(0.0, "provider"), ("provider", 0.0)),
        (result(0.0, "unknown"), ("unknown", None)),
        (result(0.1, "agent_price"), ("agent_price", 0.1)),
        # from a worker before cost sources: priced when it cost anything, else unknown
        (result(0.3), ("price_table", 0.3)),
        (result(0.0), ("unknown", None)),
    ],
)
def test_each_call_in_the_report_says_who_priced_it(
    call: ModelCallResult, expected: tuple[str, float | None]
) -> None:
    priced = priced_call(3, call)

    assert (priced.priced_by, priced.cost_usd) == expected
    assert (priced.iteration, priced.model) == (3, "gw:m")
