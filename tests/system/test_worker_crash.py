"""A worker killed with -9 mid-turn, as an operator's host dies: a new `python worker.py` on the
same queue, workspace and content store finishes the turn, and no model call is billed twice.

The kill lands while the turn waits for an approval, after two model calls and a tool call: the
new worker must rebuild the turn from its history in a fresh interpreter (no call made again),
then go on. A kill during a model or tool call costs its heartbeat timeout (30 s, 20 s) before
the call moves, which is the chaos matrix's business (`bench/chaos`), not this tier's."""

from __future__ import annotations

import json
import signal

from tests.conftest import new_key
from tests.fakes import fake_anthropic as fake
from tests.system.conftest import SystemStack
from tests.system.steps import LIST, result, start, turn_request, wait_for_state, write


async def test_a_turn_outlives_its_worker_killed_with_sigkill(stack: SystemStack) -> None:
    first = await stack.start_worker()
    key = new_key()
    stack.fake.script(
        key,
        [
            fake.tool_calls(LIST),
            fake.tool_calls(write("summary.md", "# Summary\n")),
            fake.text("Saved summary.md."),
        ],
    )
    workflow_id = await start(stack, first, turn_request(key))
    waiting = await wait_for_state(stack, workflow_id, "awaiting_approval")

    assert first.stop(signal.SIGKILL) == -signal.SIGKILL
    shared = {name: first.environment[name] for name in ("AGENT_WORKSPACE", "TURNKEEPER_DATA_DIR")}
    second = await stack.start_worker(task_queue=first.task_queue, env=shared)
    decision = {"call_id": waiting["pending"][0]["call_id"], "approved": True, "approver": "ops"}
    await stack.temporal(
        "workflow", "signal", "--workflow-id", workflow_id, "--name", "approve",
        "--input", json.dumps(decision),
    )  # fmt: skip

    report = await result(stack, workflow_id)
    assert (report["outcome"], report["llm_calls"], report["tool_calls"]) == ("completed", 3, 2)
    assert (first.workspace / "summary.md").read_text() == "# Summary\n"
    # Each step of the script billed once: the new worker replayed the first two calls.
    assert [call.step for call in stack.fake.billed_for(key)] == [0, 1, 2]
    [ended] = second.events("turn_completed")
    assert (ended["temporal_workflow"]["workflow_id"], ended["outcome"]) == (
        workflow_id, "completed",
    )  # fmt: skip
