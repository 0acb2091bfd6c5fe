"""The checks of a request's tree of sub-agents: one test per kind of tree that cannot work,
each naming its field, and the tools a request with sub-agents offers."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError
from turnkeeper.contracts.request_checks import offered_tools, request_problem
from turnkeeper.contracts.turn import TurnRequest
from turnkeeper.workflows.subagents.tools import TASK_SCHEMA, subagent_tools

from tests.unit.builders import constraints, request, request_json


def sub(name: str, agent_id: str | None = None, **agent: Any) -> dict[str, Any]:
    spec = {"id": agent_id or f"{name}-agent", "model": "anthropic:claude-sonnet-4-6"}
    return {"name": name, "description": f"the {name}", "agent": {**spec, **agent}}


def nested(depth: int) -> dict[str, Any]:
    """A chain of `depth` sub-agents, each the only one of the agent above it."""
    spec = sub(f"level{depth}")
    for level in range(depth - 1, 0, -1):
        spec = sub(f"level{level}", subagents=[spec])
    return spec


def problem(agent: dict[str, Any], **parts: Any) -> str | None:
    return request_problem(request(agent=agent, **parts))


def test_a_tree_three_levels_deep_has_no_problem() -> None:
    assert problem({"subagents": [nested(3), sub("writer")]}) is None


@pytest.mark.parametrize(
    ("agent", "parts", "field", "says"),
    [
        (
            {"subagents": [sub("helper"), sub("helper", "other")]},
            {},
            "agent.subagents.0.name",
            "names two sub-agents",
        ),
        ({"subagents": [sub("read_file")]}, {}, "agent.subagents.0.name", "already a tool"),
        (
            {"subagents": [sub("ask")]},
            {"external_tools": [{"name": "ask"}]},
            "agent.subagents.0.name",
            "already a tool",
        ),
        ({"subagents": [sub("mcp__x__y")]}, {}, "agent.subagents.0.name", "like an MCP tool"),
        (
            {"subagents": [sub("a", subagents=[sub("b", subagents=[sub("list_files")])])]},
            {},
            "agent.subagents.0.agent.subagents.0.agent.subagents.0.name",
            "already a tool",
        ),
        ({"subagents": [nested(4)]}, {}, ".subagents.0: sub-agents nest 4 levels", "3 allowed"),
        (
            {"subagents": [sub("again", "unit-agent")]},
            {},
            "agent.subagents.0.agent.id",
            "'unit-agent' delegates to itself (unit-agent -> unit-agent)",
        ),
        (
            {"subagents": [sub("a", subagents=[sub("b", "a-agent")])]},
            {},
            "agent.subagents.0.agent.subagents.0.agent.id",
            "unit-agent -> a-agent -> a-agent",
        ),
        (
            {"tools": ["read_file"], "subagents": [sub("w", tools=["read_file", "write_file"])]},
            {"task": constraints(allowed_tools=["read_file", "w"])},
            "agent.subagents.0.agent.tools",
            "'write_file' lie outside the task's allowed_tools",
        ),
        (
            {
                "subagents": [
                    sub("a", tools=["read_file"], subagents=[sub("b", tools=["write_file"])])
                ]
            },
            {"task": constraints(allowed_tools=["read_file", "a"])},
            "agent.subagents.0.agent.subagents.0.agent.tools",
            "outside the task's allowed_tools",
        ),
        (
            {"subagents": [sub("cheap", model="anthropic:no-such-model")]},
            {"task": constraints(cost_budget_usd=1)},
            "agent.subagents.0.agent.model",
            "no price is known for 'anthropic:no-such-model'",
        ),
    ],
)
def test_a_tree_that_cannot_work_is_refused_naming_its_field(
    agent: dict[str, Any], parts: dict[str, Any], field: str, says: str
) -> None:
    found = problem(agent, **parts)
    assert found is not None and field in found and says in found, found


def test_its_own_cost_budget_needs_a_price_too() -> None:
    spec = {**sub("a", model="anthropic:no-such-model"), "constraints": {"cost_budget_usd": 1}}
    found = problem({"subagents": [spec]})
    assert found is not None and "no price" in found
    priced = {**spec["agent"], "price": {"input_per_mtok": 1, "output_per_mtok": 2}}
    assert problem({"subagents": [{**spec, "agent": priced}]}) is None


def test_a_child_checks_its_depth_from_the_root() -> None:
    parent = {"workflow_id": "root", "call_id": "toolu_1", "depth": 2}
    assert problem({"subagents": [sub("a")]}, parent=parent) is None
    found = problem({"subagents": [nested(2)]}, parent=parent)
    assert found is not None and "nest 4 levels" in found


@pytest.mark.parametrize(
    "spec",
    [
        {"name": "has space", "agent": {"id": "a", "model": "anthropic:claude-sonnet-4-6"}},
        {"name": "", "agent": {"id": "a", "model": "anthropic:claude-sonnet-4-6"}},
        {"name": "a" * 65, "agent": {"id": "a", "model": "anthropic:claude-sonnet-4-6"}},
        {"name": "ok"},
        {"name": "ok", "agent": {"id": "a", "model": "anthropic:claude-sonnet-4-6"}, "x": 1},
    ],
)
def test_a_malformed_subagent_does_not_validate(spec: dict[str, Any]) -> None:
    with pytest.raises(ValidationError) as refused:
        TurnRequest.model_validate(request_json(agent={"subagents": [spec]}))
    assert "subagents.0" in str(refused.value)


def test_subagents_are_offered_as_tools_taking_a_task() -> None:
    turn_request = request(agent={"tools": ["read_file"], "subagents": [sub("researcher")]})
    assert offered_tools(turn_request) == ["read_file", "researcher"]
    [tool] = subagent_tools(turn_request)
    assert (tool.name, tool.description, tool.input_schema) == (
        "researcher",
        "the researcher",
        TASK_SCHEMA,
    )


def test_allowed_tools_may_name_a_subagent_and_leave_others_out() -> None:
    agent = {"tools": ["read_file"], "subagents": [sub("a", tools=[]), sub("b", tools=[])]}
    turn_request = request(agent=agent, task=constraints(allowed_tools=["read_file", "b"]))
    assert request_problem(turn_request) is None
    assert offered_tools(turn_request) == ["read_file", "b"]


def test_a_subagent_without_description_is_described_by_its_agent() -> None:
    spec = {"name": "r", "agent": {"id": "researcher", "model": "anthropic:claude-sonnet-4-6"}}
    [tool] = subagent_tools(request(agent={"subagents": [spec]}))
    assert "researcher" in tool.description


def test_an_agents_own_price_does_not_price_its_fallback_models() -> None:
    price = {"input_per_mtok": 1, "output_per_mtok": 2}
    spec = sub("a", model="anthropic:no-such", price=price, fallback_models=["anthropic:other"])
    found = problem({"subagents": [spec]}, task=constraints(cost_budget_usd=1))
    assert found is not None and "'anthropic:other'" in found
    priced = sub("a", model="anthropic:no-such", price=price)
    assert problem({"subagents": [priced]}, task=constraints(cost_budget_usd=1)) is None
