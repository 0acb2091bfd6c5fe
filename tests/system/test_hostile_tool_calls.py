"""Tool calls a prompt injection can make the model send, against `python worker.py`: whatever one
turn's call does, the worker's other turns and its probes keep being served."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Final

import aiohttp
from temporalio.api.enums.v1 import PendingActivityState
from temporalio.client import WorkflowExecutionStatus, WorkflowHandle
from turnkeeper.activities.tools.line_search import SEARCH_TIME_LIMIT_S
from turnkeeper.contracts.names import ACTIVITY_TOOL_CALL

from tests.conftest import new_key
from tests.fakes import fake_anthropic as fake
from tests.support.waiting import until
from tests.system.conftest import SystemStack, WorkerProcess
from tests.system.test_approvals_and_budgets import result, start, turn_request

# A backtracking engine tries 2^n ways to split n a's before the '!' refuses each: Python's `re`
# took 6 s at 26 characters on the review's machine, holding the GIL throughout.
CATASTROPHIC: Final = "(a+)+$"
BAIT_LINE: Final = "a" * 40 + "!"
# A turn of one tool call and two model calls takes well under a second on an idle worker.
OTHER_TURN_S: Final = 15.0
HEALTH_ANSWER_S: Final = 5.0
STARTED: Final = PendingActivityState.PENDING_ACTIVITY_STATE_STARTED


async def health_url(worker: WorkerProcess) -> str:
    async def port() -> int | None:
        started = worker.events("health server started")
        return started[0]["port"] if started else None

    return f"http://127.0.0.1:{await until(port, bool, 'the health server to start')}"


async def liveness(url: str) -> int:
    timeout = aiohttp.ClientTimeout(total=HEALTH_ANSWER_S)
    async with (
        aiohttp.ClientSession(timeout=timeout) as session,
        session.get(f"{url}/healthz") as response,
    ):
        return response.status


async def wait_for_tool_call_to_start(stack: SystemStack, workflow_id: str) -> None:
    """Until the turn's tool call is running in a worker, or has already finished."""
    handle = stack.client.get_workflow_handle(workflow_id)

    async def started() -> bool:
        pending = (await handle.describe()).raw_description.pending_activities
        if any(a.activity_type.name == ACTIVITY_TOOL_CALL and a.state == STARTED for a in pending):
            return True
        return await a_tool_call_finished(handle)

    await until(started, bool, f"{workflow_id}'s tool call to start")


async def a_tool_call_finished(handle: WorkflowHandle[Any, Any]) -> bool:
    events = (await handle.fetch_history()).events
    tool_calls = {
        e.event_id
        for e in events
        if e.activity_task_scheduled_event_attributes.activity_type.name == ACTIVITY_TOOL_CALL
    }
    return any(
        e.activity_task_completed_event_attributes.scheduled_event_id in tool_calls for e in events
    )


async def wait_until_closed(stack: SystemStack, workflow_id: str, within_s: float) -> None:
    handle = stack.client.get_workflow_handle(workflow_id)

    async def status() -> WorkflowExecutionStatus | None:
        return (await handle.describe()).status

    await until(
        status,
        lambda seen: seen != WorkflowExecutionStatus.RUNNING,
        f"{workflow_id} to finish",
        within_s=within_s,
    )


def tool_results(stack: SystemStack, key: str) -> list[dict[str, Any]]:
    """The tool_result blocks the model was sent by the turn of script `key`."""
    last = stack.fake.requests_for(key)[-1].body["messages"][-1]
    return [block for block in last["content"] if block.get("type") == "tool_result"]


async def test_a_catastrophic_search_pattern_stalls_no_other_turn(stack: SystemStack) -> None:
    worker = await stack.start_worker(
        "--health-port", "0", env={"TURNKEEPER_HEALTH_HOST": "127.0.0.1"}
    )
    health = await health_url(worker)
    (worker.workspace / "bait.txt").write_text(f"{BAIT_LINE}\n")
    searching, other = new_key(), new_key()
    stack.fake.script(
        searching,
        [fake.tool_calls(("search_files", {"pattern": CATASTROPHIC})), fake.text("Searched.")],
    )
    stack.fake.script(other, [fake.tool_calls(("list_files", {})), fake.text("Listed.")])
    search_turn = await start(stack, worker, turn_request(searching))
    await wait_for_tool_call_to_start(stack, search_turn)
    began = time.monotonic()

    other_turn = await start(stack, worker, turn_request(other))
    assert await liveness(health) == 200
    await wait_until_closed(stack, other_turn, within_s=OTHER_TURN_S)
    assert (await result(stack, other_turn))["outcome"] == "completed"

    await wait_until_closed(stack, search_turn, within_s=SEARCH_TIME_LIMIT_S + 10)
    assert time.monotonic() - began < SEARCH_TIME_LIMIT_S + 10
    [answer] = tool_results(stack, searching)
    assert "no matches for '(a+)+$'" in str(answer["content"]), answer
    assert (await result(stack, search_turn))["outcome"] == "completed"


async def test_a_planted_hard_link_does_not_read_a_file_outside(
    stack: SystemStack, tmp_path: Path
) -> None:
    worker = await stack.start_worker()
    secret = tmp_path / "credentials.txt"
    secret.write_text("AWS_SECRET_ACCESS_KEY=planted-leak-7731\n")
    os.link(secret, worker.workspace / "notes.txt")
    key = new_key()
    stack.fake.script(
        key,
        [
            fake.tool_calls(
                ("read_file", {"path": "notes.txt"}),
                ("search_files", {"pattern": "SECRET"}),
                ("list_files", {"path": "."}),
            ),
            fake.text("Done."),
        ],
    )
    workflow_id = await start(stack, worker, turn_request(key))

    assert (await result(stack, workflow_id))["outcome"] == "completed"
    read, search, listing = tool_results(stack, key)
    assert read["is_error"] is True
    assert "'notes.txt' has 2 hard links" in str(read["content"])
    assert "no matches for 'SECRET'" in str(search["content"])
    assert "notes.txt" in str(listing["content"])
    assert "planted-leak-7731" not in json.dumps(stack.fake.requests_for(key)[-1].body)
