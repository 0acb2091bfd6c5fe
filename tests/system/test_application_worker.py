"""An application's own worker, as the README's first example writes it: a script that declares
`@turnkeeper.tool`s (one on the fast path, `local=True`) and calls
`turnkeeper.run_worker(tools=[…])`, run as its own process with the address and queue in its
environment, and driven by the README's Python loop (`events()`, `approve()`, `result()`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import turnkeeper
from tests.conftest import new_key
from tests.fakes import fake_anthropic as fake
from tests.system.conftest import SystemStack
from tests.system.steps import connect_as_user, model_saw, tool_results

SHOP_WORKER = '''
import asyncio
import json
from pathlib import Path

import turnkeeper


@turnkeeper.tool(local=True)
async def lookup_order(order_id: str) -> dict:
    """Look up an order by its id."""
    return {"order_id": order_id, "status": "arrived broken", "total_usd": 40.0}


@turnkeeper.tool(requires_approval=True, idempotent=False)
def refund(order_id: str, amount_usd: float, ctx: turnkeeper.ToolContext) -> str:
    """Refund part or all of an order."""
    entry = {"order_id": order_id, "amount_usd": amount_usd, "key": ctx.idempotency_key}
    with Path("refunds.jsonl").open("a") as ledger:
        ledger.write(json.dumps(entry) + "\\n")
    return f"refunded ${amount_usd:.2f} on order {order_id}"


asyncio.run(turnkeeper.run_worker(tools=[lookup_order, refund]))
'''


async def test_an_application_worker_runs_its_own_tools(
    stack: SystemStack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "shop_worker.py"
    script.write_text(SHOP_WORKER)
    worker = await stack.start_worker(script=[sys.executable, str(script)])
    key = new_key()
    stack.fake.script(
        key,
        [
            fake.tool_calls(("lookup_order", {"order_id": "1042"})),
            fake.tool_calls(("refund", {"order_id": "1042", "amount_usd": 25})),
            fake.text("Refunded $25 on order 1042."),
        ],
    )

    client = await connect_as_user(worker, monkeypatch)
    handle = await turnkeeper.start_turn(
        client,
        agent={
            "id": "support",
            "model": "anthropic:claude-sonnet-4-6",
            "system_prompt": f"You help customers. [script:{key}]",
            "tools": ["lookup_order", "refund"],
        },
        task={"id": f"ticket-{key}", "input": "Refund $25 on order 1042: it arrived broken"},
    )
    async for event in handle.events():
        if event.kind == "approval_requested":
            await handle.approve(event.call_id, approver="alice")
    report = await handle.result()

    assert (report.outcome, report.tool_calls) == ("completed", 2)
    offered = {tool["name"]: tool for tool in stack.fake.requests_for(key)[0].body["tools"]}
    assert offered.keys() == {"lookup_order", "refund"}
    schema = offered["refund"]["input_schema"]  # from the type hints; the context is not offered
    assert schema["properties"].keys() == {"order_id", "amount_usd"}
    assert offered["refund"]["description"] == "Refund part or all of an order."
    looked_up = tool_results(model_saw(stack, key)[2])
    assert "arrived broken" in json.dumps(looked_up)
    [refunded] = tool_results(model_saw(stack, key)[-1])
    assert "refunded $25.00 on order 1042" in json.dumps(refunded)
    ledger = (worker.log_path.parent / "refunds.jsonl").read_text().splitlines()
    [entry] = [json.loads(line) for line in ledger]
    call_id = report.decisions[0].call_id
    assert (entry["amount_usd"], entry["key"]) == (25, f"{handle.id}/{call_id}")
    # The local tool ran as a local activity: a marker in history instead of an activity task
    # (the other local activity is the standing-approval lookup of `refund`).
    shown = await stack.temporal("workflow", "show", "--workflow-id", handle.id)
    scheduled = [
        event["activityTaskScheduledEventAttributes"]["activityType"]["name"]
        for event in shown["events"]
        if event["eventType"] == "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED"
    ]
    assert sorted(scheduled) == ["model_call"] * 3 + ["tool_call"], scheduled  # refund only
    # The turn record, as `python worker.py` writes it.
    [ended] = worker.events("turn_completed")
    assert (ended["outcome"], ended["tool_calls"]) == ("completed", 2)
    assert worker.stop() == 0  # SIGTERM drains and exits 0
