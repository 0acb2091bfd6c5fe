"""A request that cannot work fails at once with `InvalidTurnRequest` naming the field, and never
calls the model."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import ApplicationError
from turnkeeper.contracts.turn import AgentReport

from tests.conftest import TurnRunner, new_key, scripted_request
from tests.fakes import fake_anthropic as fake


def without(request: dict[str, Any], path: str) -> dict[str, Any]:
    broken = copy.deepcopy(request)
    *parents, leaf = path.split(".")
    node = broken
    for part in parents:
        node = node[part]
    del node[leaf]
    return broken


def with_value(request: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    broken = copy.deepcopy(request)
    *parents, leaf = path.split(".")
    node = broken
    for part in parents:
        node = node.setdefault(part, {})
    node[leaf] = value
    return broken


async def assert_invalid(turns: TurnRunner, request: Any, *needles: str) -> ApplicationError:
    handle = await turns.start(request)
    with pytest.raises(WorkflowFailureError) as failure:
        await handle.result()
    error = failure.value.cause
    assert isinstance(error, ApplicationError)
    assert error.type == "InvalidTurnRequest"
    assert error.non_retryable
    for needle in needles:
        assert needle in error.message, error.message
    assert AgentReport.model_validate(error.details[0]).outcome == "failed"
    return error


@pytest.mark.parametrize(
    "field", ["agent", "task", "agent.id", "agent.model", "task.id", "task.input"]
)
async def test_each_required_field_missing(turns: TurnRunner, field: str) -> None:
    key = new_key()
    turns.fake.script(key, [fake.text("should never be called")])

    await assert_invalid(turns, without(scripted_request(key), field), field, "Field required")

    assert turns.fake.requests_for(key) == []


@pytest.mark.parametrize(
    ("path", "value", "needle"),
    [
        ("agent.model", "claude-sonnet-4-6", "provider:model-name"),
        ("agent.model", "Open AI:gpt-5", "unknown provider 'Open AI'"),
        ("agent.max_iterations", 0, "agent.max_iterations"),
        ("agent.max_iterations", "ten", "agent.max_iterations"),
        ("task.input", "", "task.input"),
        ("task.constraints.cost_budget_usd", -1, "task.constraints.cost_budget_usd"),
        ("task.constraints.allowed_tools", ["read_file", "rm_rf"], "'rm_rf'"),
        ("task.constraints.surprise", True, "task.constraints.surprise"),
        ("history", [{"role": "assistant", "content": "hi"}], "history.0.role"),
        ("external_tools", [{"name": "read_file"}], "defined twice"),
        ("external_tools", [{"name": "has space"}], "external_tools.0.name"),
        ("external_tools", [{"name": "mcp__web__search"}], "named like an MCP tool"),
    ],
)
async def test_wrong_values(turns: TurnRunner, path: str, value: Any, needle: str) -> None:
    key = new_key()
    turns.fake.script(key, [fake.text("should never be called")])

    await assert_invalid(turns, with_value(scripted_request(key), path, value), needle)

    assert turns.fake.requests_for(key) == []


async def test_not_an_object(turns: TurnRunner) -> None:
    await assert_invalid(turns, ["not", "a", "request"], "invalid turn request")


async def test_agent_tool_unknown_to_the_worker(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(key, [fake.text("should never be called")])
    request = scripted_request(key, agent={"tools": ["read_file", "teleport"]})

    await assert_invalid(turns, request, "'teleport'", "neither a tool of this worker")

    assert turns.fake.requests_for(key) == []
