"""Start a lead agent with two specialists from `request.json`, approve the files its writer
wants to save through the lead (the root of the tree), and print what each sub-agent spent.

    python examples/subagents/client.py ["another task"] [--approver alice]

Start `python worker.py --dev` first (its built-in workspace tools are all this team uses).
Connects to TEMPORAL_ADDRESS and starts the turn on AGENT_TASK_QUEUE (default `agent-turns`).
A real approver would look before approving: here the code approves every call that waits and
says so.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import uuid
from pathlib import Path

import turnkeeper

REQUEST = Path(__file__).with_name("request.json")
POLL_S = 0.5


async def main(task_input: str | None, approver: str) -> int:
    request = json.loads(REQUEST.read_text())
    request["task"]["id"] = f"team-{uuid.uuid4().hex[:8]}"
    if task_input:
        request["task"]["input"] = task_input
    client = await turnkeeper.connect()
    handle = await turnkeeper.start_turn(
        client, request, task_queue=os.environ.get("AGENT_TASK_QUEUE", "agent-turns")
    )
    print(f"turn {handle.id}")
    result = asyncio.ensure_future(handle.result())
    decided: set[str] = set()
    while not result.done():
        # The root's status lists every call that waits anywhere in its tree, each with the
        # workflow id of the turn where it waits; the root passes a decision on to it.
        for call in (await handle.status()).pending:
            if call.kind == "approval" and call.call_id not in decided:
                where = call.workflow_id or handle.id
                print(f"  approving {call.tool} {json.dumps(call.input)} in {where} as {approver}")
                await handle.approve(call.call_id, approver=approver, reason="example")
                decided.add(call.call_id)
        await asyncio.wait({result}, timeout=POLL_S)
    try:
        report = result.result()
    except turnkeeper.TurnError as failure:
        print(f"turn failed: {failure.type}: {failure}", file=sys.stderr)
        return 1
    for child in report.subagents:
        print(
            f"  sub-agent {child.name} ({child.workflow_id}): {child.outcome}, "
            f"{child.cost_usd:.4f} USD, {child.llm_calls} model calls, "
            f"{child.tool_calls} tool calls"
        )
    print(report.output)
    print(f"cost: {report.cost_usd:.4f} USD in all, {report.llm_calls} model calls")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", nargs="?", help="the lead's task (default: the request's)")
    parser.add_argument("--approver", default="alice", help="who approves the writer's files")
    args = parser.parse_args()
    # A short-lived client process ends without interpreter teardown: the Temporal SDK's Rust
    # threads can abort CPython's finalization (temporalio/sdk-python#300).
    turnkeeper.exit_without_teardown(asyncio.run(main(args.task, args.approver)))
