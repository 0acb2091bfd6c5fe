"""Ask the support agent for something, follow the turn live, and approve its refunds from code.

    python examples/support/client.py "Refund order 1042, it arrived broken" [--approver alice]

Start `worker.py` first. Connects to TEMPORAL_ADDRESS and starts the turn on AGENT_TASK_QUEUE
(default `agent-turns`), like the worker. A real approver would look before approving: here the
code approves every refund it is asked about and says so.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import uuid

from tools import AGENT

import turnkeeper


async def main(request: str, approver: str) -> int:
    client = await turnkeeper.connect()
    handle = await turnkeeper.start_turn(
        client,
        agent=AGENT,
        task={"id": f"ticket-{uuid.uuid4().hex[:8]}", "input": request},
        task_queue=os.environ.get("AGENT_TASK_QUEUE", "agent-turns"),
    )
    print(f"turn {handle.id}")
    async for event in handle.events():
        if event.kind == "tool_call_started":
            print(f"  tool call: {event.tool} {json.dumps(event.input)}")
        elif event.kind == "approval_requested" and event.call_id:
            print(f"  approving {event.tool} {json.dumps(event.input)} as {approver}")
            await handle.approve(event.call_id, approver=approver, reason="example")
    try:
        report = await handle.result()
    except turnkeeper.TurnError as failure:
        print(f"turn failed: {failure.type}: {failure}", file=sys.stderr)
        return 1
    for result in tool_results(report):
        print(f"  tool result: {result}")
    print(report.output)
    print(f"cost: {report.cost_usd:.4f} USD, {report.llm_calls} model calls")
    return 0


def tool_results(report: turnkeeper.AgentReport) -> list[str]:
    """The text of every tool result in the turn's conversation, in order."""
    return [
        block.content
        if isinstance(block.content, str)
        else "".join(part.text for part in block.content)
        for message in report.messages
        for block in message.content
        if block.type == "tool_result" and block.content
    ]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("request", help="what the customer asks for")
    parser.add_argument("--approver", default="alice", help="who approves the refunds")
    args = parser.parse_args()
    # A short-lived client process ends without interpreter teardown: the Temporal SDK's Rust
    # threads can abort CPython's finalization (temporalio/sdk-python#300).
    turnkeeper.exit_without_teardown(asyncio.run(main(args.request, args.approver)))
