"""The offline `demo:tool-caller` model in real turns on the session's dev server: it calls each
tool the agent offers once, with arguments made from the tool's schema, waits like any model for
a call that needs approval, and answers with one line per tool, a tool's error and a rejection
included. (The arguments' rules without a server: tests/unit/activities/providers/
test_schema_arguments.py.)"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field
from turnkeeper.activities.providers.tool_caller_model import PREFIX, TOOL_CALLER_MODEL

import turnkeeper
from turnkeeper.testing.pytest_plugin import EnvironmentFactory

MODEL = f"demo:{TOOL_CALLER_MODEL}"
CALLS: list[tuple[str, dict[str, object]]] = []


@turnkeeper.tool
async def lookup_order(order_id: Annotated[str, Field(examples=["1042"])]) -> str:
    """Look an order up."""
    CALLS.append(("lookup_order", {"order_id": order_id}))
    return f"order {order_id}: delivered, 25.00 USD"


@turnkeeper.tool
async def track(parcel_ids: list[str], express: bool) -> str:
    """Track parcels; there is no carrier here, so it always fails."""
    CALLS.append(("track", {"parcel_ids": parcel_ids, "express": express}))
    raise turnkeeper.ToolError("the carrier did not answer")


@turnkeeper.tool(requires_approval=True, idempotent=False)
async def refund(order_id: str, amount_usd: Annotated[float, Field(gt=0, le=25)]) -> str:
    """Refund an order."""
    CALLS.append(("refund", {"order_id": order_id, "amount_usd": amount_usd}))
    return f"refunded {amount_usd:.2f} USD on order {order_id}"


async def test_each_tool_is_called_once_then_the_answer_reports_every_result(
    turn_env: EnvironmentFactory,
) -> None:
    CALLS.clear()
    async with turn_env(tools=[lookup_order, track, refund], model=MODEL) as env:
        handle = await env.start_turn("Refund order 1042")
        pending = await handle.wait_for_approval(timeout=30)
        assert (pending.tool, pending.input) == ("refund", {"order_id": "example", "amount_usd": 1})
        await handle.approve(pending.call_id, approver="alice")
        report = await handle.result()

    assert sorted(CALLS) == [
        ("lookup_order", {"order_id": "1042"}),
        ("refund", {"order_id": "example", "amount_usd": 1.0}),
        ("track", {"parcel_ids": ["example"], "express": True}),
    ]
    assert report.llm_calls == 2 and report.cost_usd == 0
    assert report.output.splitlines() == [
        f"{PREFIX} I called each tool once:",
        '- lookup_order({"order_id": "1042"}) returned order 1042: delivered, 25.00 USD',
        '- track({"express": true, "parcel_ids": ["example"]}) error: the carrier did not answer',
        '- refund({"amount_usd": 1, "order_id": "example"}) returned refunded 1.00 USD on order '
        "example",
    ]


async def test_a_rejected_call_is_reported_and_its_tool_never_runs(
    turn_env: EnvironmentFactory,
) -> None:
    CALLS.clear()
    async with turn_env(tools=[refund], model=MODEL) as env:
        handle = await env.start_turn("Refund order 1042")
        pending = await handle.wait_for_approval(timeout=30)
        await handle.reject(pending.call_id, reason="not without a receipt")
        report = await handle.result()

    assert CALLS == []
    answer = report.output.splitlines()
    assert answer[1].startswith('- refund({"amount_usd": 1, "order_id": "example"}) error: ')
    assert "not without a receipt" in answer[1]


async def test_without_tools_it_answers_at_once(turn_env: EnvironmentFactory) -> None:
    async with turn_env(model=MODEL) as env:
        report = await (await env.start_turn("Hello there")).result()
    assert report.output == f"{PREFIX} I was offered no tools to call. Your message: Hello there"
    assert report.llm_calls == 1


async def test_asked_for_structured_output_it_answers_with_a_value_of_the_schema(
    turn_env: EnvironmentFactory,
) -> None:
    schema = {
        "type": "object",
        "properties": {
            "order_id": {"type": "string", "examples": ["1042"]},
            "refund_usd": {"type": "number", "minimum": 0},
            "note": {"type": "string"},
        },
        "required": ["order_id", "refund_usd"],
        "additionalProperties": False,
    }
    CALLS.clear()
    async with turn_env(tools=[lookup_order], model=MODEL) as env:
        handle = await env.start_turn("What do we refund?", agent={"output_schema": schema})
        report = await handle.result()
    assert CALLS == [("lookup_order", {"order_id": "1042"})]
    assert report.structured_output == {"order_id": "1042", "refund_usd": 1}
    assert report.llm_calls == 2
