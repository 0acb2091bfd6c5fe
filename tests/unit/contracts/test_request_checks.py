"""Checks that span several fields of a `TurnRequest`: one test per kind of request that cannot
work, each naming its field, and the tool set the model is offered."""

from __future__ import annotations

from typing import Any

import pytest
from turnkeeper.contracts.request_checks import offered_tools, request_problem

from tests.unit.builders import constraints, request

WRITE = {"name": "ask_user", "input_schema": {"type": "object"}}


def problem(**parts: Any) -> str | None:
    return request_problem(request(**parts))


def test_a_plain_request_has_no_problem() -> None:
    assert problem() is None


@pytest.mark.parametrize(
    ("parts", "field", "says"),
    [
        (
            {"agent": {"tools": ["read_file", "read_file", "write_file"]}},
            "agent.tools",
            "'read_file' more than once",
        ),
        (
            {"external_tools": [{"name": "mcp__files__read"}]},
            "external_tools",
            "named like an MCP tool",
        ),
        (
            {"agent": {"tools": ["ask_user"]}, "external_tools": [WRITE]},
            "external_tools",
            "defined twice",
        ),
        (
            {"task": constraints(allowed_tools=["read_file", "launch"])},
            "task.constraints.allowed_tools",
            "'launch', which the agent does not have",
        ),
        (
            {"history": [{"role": "assistant", "content": [{"type": "text", "text": "hi"}]}]},
            "history.0.role",
            "starting with user",
        ),
        (
            {
                "history": [
                    {"role": "user", "content": [{"type": "text", "text": "a"}]},
                    {"role": "user", "content": [{"type": "text", "text": "b"}]},
                ]
            },
            "history.1.role",
            "must alternate",
        ),
        (
            {"agent": {"model": "anthropic:no-such-model"}, "task": constraints(cost_budget_usd=1)},
            "task.constraints.cost_budget_usd",
            "no price is known for 'anthropic:no-such-model'",
        ),
        (
            {
                "agent": {"fallback_models": ["openai:no-such-model"]},
                "task": constraints(cost_budget_usd=1),
            },
            "task.constraints.cost_budget_usd",
            "'openai:no-such-model'",
        ),
        (
            {"agent": {"tools": ["read_file"], "a2a_agents": ["read_file"]}},
            "agent.a2a_agents",
            "'read_file' is also a tool name in agent.tools",
        ),
        (
            {"agent": {"a2a_agents": ["ask_user"]}, "external_tools": [WRITE]},
            "agent.a2a_agents",
            "'ask_user' is also a tool name in external_tools",
        ),
        (
            {"agent": {"output_schema": {"type": "no-such-type"}}},
            "agent.output_schema",
            "input schema is itself invalid",
        ),
    ],
)
def test_each_request_that_cannot_work_names_its_field(
    parts: dict[str, Any], field: str, says: str
) -> None:
    found = problem(**parts)
    assert found is not None
    assert found.startswith(f"{field}: ")
    assert says in found


def test_a_budget_on_a_named_endpoint_s_unpriced_model_is_left_to_the_worker() -> None:
    # The worker knows whether the endpoint reports what it bills; the request cannot.
    parts = {"agent": {"model": "gw:no-such-model"}, "task": constraints(cost_budget_usd=1)}
    asked: list[str] = []

    def refusing() -> bool:
        asked.append("asked")
        return False

    assert problem(**parts) is None
    assert request_problem(request(**parts), endpoints_may_price=refusing) is not None
    assert asked == ["asked"]  # asked only when such a model is met (it records a patch marker)
    never = request_problem(request(), endpoints_may_price=refusing)
    assert never is None and asked == ["asked"]


def test_a_fallback_entry_prices_its_own_model() -> None:
    price = {"input_per_mtok": 1, "output_per_mtok": 2}
    entry = {"model": "openai:no-such-model", "price": price}
    budget = constraints(cost_budget_usd=1)

    assert problem(agent={"fallback_models": [entry]}, task=budget) is None
    unpriced = problem(agent={"fallback_models": [{"model": "openai:no-such-model"}]}, task=budget)
    assert unpriced is not None and "'openai:no-such-model'" in unpriced
    agent = request(agent={"fallback_models": ["openai:gpt-4.1", entry]}).agent
    assert agent.fallback_chain() == ["openai:gpt-4.1", "openai:no-such-model"]
    assert agent.price_of("openai:no-such-model") is not None
    assert agent.price_of("openai:gpt-4.1") is None  # the table's


def test_an_unpriced_model_is_fine_without_a_cost_budget_or_with_a_price() -> None:
    assert problem(agent={"model": "anthropic:no-such-model"}) is None
    price = {"input_per_mtok": 1, "output_per_mtok": 2}
    assert (
        problem(
            agent={"model": "anthropic:no-such-model", "price": price},
            task=constraints(cost_budget_usd=1),
        )
        is None
    )


def test_alternating_history_starting_with_user_is_fine() -> None:
    history = [
        {"role": "user", "content": [{"type": "text", "text": "a"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "b"}]},
    ]
    assert problem(history=history) is None


def test_the_model_is_offered_agent_and_external_tools_in_order() -> None:
    offered = offered_tools(request(agent={"tools": ["read_file"]}, external_tools=[WRITE]))
    assert offered == ["read_file", "ask_user"]


def test_allowed_tools_narrow_what_the_model_is_offered() -> None:
    offered = offered_tools(
        request(
            agent={"tools": ["read_file", "write_file"]},
            task=constraints(allowed_tools=["ask_user", "read_file"]),
            external_tools=[WRITE],
        )
    )
    assert offered == ["read_file", "ask_user"]
    assert offered_tools(request(agent={"tools": []}, task=constraints(allowed_tools=[]))) == []


def test_remote_a2a_agents_are_offered_after_the_other_tools_and_narrowed_alike() -> None:
    agent = {"tools": ["read_file"], "a2a_agents": ["research", {"name": "pricing"}]}
    assert offered_tools(request(agent=agent)) == ["read_file", "research", "pricing"]
    narrowed = request(agent=agent, task=constraints(allowed_tools=["pricing"]))
    assert offered_tools(narrowed) == ["pricing"]
    assert problem(agent=agent, task=constraints(allowed_tools=["pricing"])) is None
