"""Fuzzed bad input against real turns on the dev server: request JSON, signal and update
payloads, provider answers of the wrong shape, tool output that is not UTF-8. Every case ends
in a typed error or a handled result, and no workflow task ever fails (a failing workflow task
is retried forever: the turn would hang)."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowFailureError, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from turnkeeper.contracts.names import (
    SIGNAL_APPROVE,
    SIGNAL_SUBMIT_TOOL_RESULT,
    UPDATE_DECIDE,
    WORKFLOW_TYPE,
)

from tests.conftest import TurnRunner, new_key, scripted_request, wait_for_pending
from tests.fakes import fake_anthropic as fake
from tests.support.strategies import deeply_nested, json_values, request_like
from tests.support.turn_outcomes import CONTRACT_ERROR_TYPES


def drawn(strategy: st.SearchStrategy[Any], count: int) -> list[Any]:
    """`count` examples of `strategy`, drawn by Hypothesis (reproducibly), to run against the
    server: each example there costs a turn, so they are drawn first and run side by side."""
    found: list[Any] = []

    @settings(
        max_examples=count,
        database=None,
        derandomize=True,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def collect(value: Any) -> None:
        found.append(value)

    collect()
    return found[:count]


async def outcome(handle: WorkflowHandle[Any, Any]) -> str:
    """ "completed" or the failure's type; asserts no workflow task of the turn ever failed."""
    try:
        await handle.result()
        result = "completed"
    except WorkflowFailureError as failure:
        cause = failure.cause
        assert isinstance(cause, ApplicationError), cause
        result = cause.type or ""
    async for event in handle.fetch_history_events():
        assert event.event_type != EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED, event
    return result


async def test_fuzzed_request_json_fails_typed_and_never_loops(turns: TurnRunner) -> None:
    payloads = drawn(request_like() | json_values(), 12)
    payloads.append(deeply_nested(60))
    handles = [
        await turns.client.start_workflow(
            WORKFLOW_TYPE, payload, id=f"fuzz-{uuid.uuid4()}", task_queue=turns.task_queue
        )
        for payload in payloads
    ]
    outcomes = await asyncio.gather(*(outcome(handle) for handle in handles))
    assert set(outcomes) <= CONTRACT_ERROR_TYPES | {"completed"}, outcomes


async def test_fuzzed_signals_and_updates_leave_the_turn_waiting_then_it_completes(
    turns: TurnRunner,
) -> None:
    key = new_key()
    turns.fake.script(
        key, [fake.tool_calls(("write_file", {"path": "a.md", "content": "A"})), fake.text("ok")]
    )
    handle = await turns.start(scripted_request(key))
    [pending] = (await wait_for_pending(handle)).pending
    garbage = drawn(json_values() | request_like(), 15)
    for payload in garbage:
        await handle.signal(SIGNAL_APPROVE, payload)
        await handle.signal(SIGNAL_SUBMIT_TOOL_RESULT, payload)
    refused = 0
    for payload in garbage[:8]:
        try:
            await handle.execute_update(UPDATE_DECIDE, payload)
        except WorkflowUpdateFailedError:
            refused += 1
    assert refused == 8
    assert len((await wait_for_pending(handle)).pending) == 1  # nothing decided by garbage

    await handle.signal(SIGNAL_APPROVE, {"call_id": pending.call_id, "approved": True})

    assert await outcome(handle) == "completed"


async def test_provider_answers_of_the_wrong_shape_are_retried_not_defects(
    turns: TurnRunner,
) -> None:
    bodies = [json.dumps(value).encode() for value in drawn(json_values(), 2)]
    depth = 3000  # deeper than Python's JSON parser can go without a RecursionError
    bodies.append(b'{"a":[' * depth + b'"x"' + b"]}" * depth)
    key = new_key()
    turns.fake.script(key, [[*(fake.RawReply(200, body) for body in bodies), fake.text("ok")]])

    handle = await turns.start(scripted_request(key))

    assert await outcome(handle) == "completed"
    assert len(turns.fake.requests_for(key)) == len(bodies) + 1


async def test_tool_output_that_is_not_utf8_is_a_handled_result(turns: TurnRunner) -> None:
    (turns.workspace / "bad.txt").write_bytes(b"ok \xff\xfe then \xc3\x28 and \xed\xa0\x80")
    key = new_key()
    turns.fake.script(
        key, [fake.tool_calls(("read_file", {"path": "bad.txt"})), fake.text("read it")]
    )

    report = await turns.run(scripted_request(key))

    assert report.output == "read it"
    assert report.tool_calls == 1
