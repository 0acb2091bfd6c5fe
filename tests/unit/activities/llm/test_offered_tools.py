"""The tools a model call offers, and what the workflow learns of the worker's tools."""

from __future__ import annotations

import pytest
from temporalio.exceptions import ApplicationError
from turnkeeper.activities.llm.offered_tools import (
    approval_required,
    tool_definitions,
    tool_traits,
)
from turnkeeper.activities.tools.registry import ToolRegistry
from turnkeeper.contracts.activity_io import CallContext
from turnkeeper.contracts.errors import INVALID_TURN_REQUEST
from turnkeeper.contracts.tools import ToolDefinition
from turnkeeper.contracts.turn import ExternalToolSpec

from tests.unit.activities.llm.steps import registry

CONTEXT = CallContext(
    external_tools=[ExternalToolSpec(name="ask_user", description="Ask the person.")],
    mcp_tools=[ToolDefinition(name="mcp__web__fetch", description="Fetch a page.")],
)


def test_each_offered_tool_is_defined_in_order_from_where_it_lives() -> None:
    names = ["refund", "mcp__web__fetch", "ask_user"]

    definitions = tool_definitions(names, CONTEXT, registry())

    assert [tool.name for tool in definitions] == names
    assert definitions[0].description == "Refund part or all of an order."
    assert definitions[0].input_schema["required"] == ["order_id", "amount_usd"]
    assert definitions[1] == CONTEXT.mcp_tools[0]
    assert definitions[2] == ToolDefinition(
        name="ask_user", description="Ask the person.", input_schema={"type": "object"}
    )


def test_an_mcp_tool_wins_over_a_worker_tool_of_the_same_name() -> None:
    context = CallContext(mcp_tools=[ToolDefinition(name="refund", description="from MCP")])

    (definition,) = tool_definitions(["refund"], context, registry())

    assert definition.description == "from MCP"


@pytest.mark.parametrize(
    ("tools", "known"),
    [(registry(), "lookup_order, refund"), (ToolRegistry(), "none")],
    ids=["a worker with tools", "a worker without tools"],
)
def test_a_tool_that_lives_nowhere_refuses_the_request_naming_what_there_is(
    tools: ToolRegistry, known: str
) -> None:
    with pytest.raises(ApplicationError) as refused:
        tool_definitions(["refund_all"], CONTEXT, tools)

    assert refused.value.type == INVALID_TURN_REQUEST
    assert refused.value.non_retryable
    assert "'refund_all'" in refused.value.message
    assert f"({known})" in refused.value.message


def test_only_offered_worker_tools_that_declare_it_need_approval() -> None:
    tools = registry()

    assert approval_required(["lookup_order", "refund", "ask_user"], tools) == ["refund"]
    assert approval_required(["lookup_order", "ask_user"], tools) == []


def test_the_traits_of_offered_worker_tools_say_how_to_dispatch_their_calls() -> None:
    refund, lookup = tool_traits(["refund", "ask_user", "lookup_order"], registry())

    assert refund.name == "refund"
    assert refund.requires_approval
    assert not refund.idempotent
    assert (refund.timeout_s, refund.priority, refund.local) == (5.0, 2, False)
    assert refund.input_schema["required"] == ["order_id", "amount_usd"]
    assert lookup.name == "lookup_order"
    assert lookup.local
    assert lookup.idempotent
