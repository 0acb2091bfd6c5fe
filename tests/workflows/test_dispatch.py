"""Dispatching tool calls through the whole turn: tools that raise or time out, argument
validation with its correction budget, priority tiers, parallel and one-by-one dispatch."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import ApplicationError
from turnkeeper.activities.tools.registry import ToolRegistry, worker_tool
from turnkeeper.contracts.messages import ToolResultBlock
from turnkeeper.contracts.names import ACTIVITY_TOOL_CALL
from turnkeeper.contracts.turn import AgentReport

from tests.conftest import TurnRunner, make_settings, new_key, running_worker, scripted_request
from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import FakeAnthropic

RAN: set[str] = set()  # labels of the nap calls that ran


@worker_tool(name="nap")
async def nap(label: str) -> str:
    """Rest, recording that it ran."""
    RAN.add(label)
    return f"{label} rested"


@worker_tool(name="urgent", priority=5)
def urgent() -> str:
    """A tool that must run before the others."""
    return "urgent done"


@worker_tool(name="count")
def count(n: int) -> str:
    """Count to n."""
    return " ".join(str(i) for i in range(1, n + 1))


@worker_tool(name="explode")
def explode() -> str:
    """Always fails."""
    raise RuntimeError("the fuse was short")


@worker_tool(name="dawdle", timeout_s=0.3)
async def dawdle() -> str:
    """Takes longer than it may."""
    await asyncio.sleep(5)
    return "too late"


TOOLS = ["nap", "urgent", "count", "explode", "dawdle"]


@pytest.fixture
async def custom(
    client: Client, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> AsyncIterator[TurnRunner]:
    settings = make_settings(tmp_path, f"tq-{uuid.uuid4()}")
    registry = ToolRegistry([nap, urgent, count, explode, dawdle])
    async with running_worker(client, settings, fake_anthropic, tools=registry):
        yield TurnRunner(client, settings.task_queue, settings, fake_anthropic)


def results(report: AgentReport, message: int = 2) -> list[ToolResultBlock]:
    return [b for b in report.messages[message].content if isinstance(b, ToolResultBlock)]


def request(key: str, **agent: object) -> dict:
    return scripted_request(key, agent={"tools": TOOLS, **agent})


async def test_a_tool_that_raises_or_times_out_is_an_error_result(custom: TurnRunner) -> None:
    key = new_key()
    custom.fake.script(key, [fake.tool_calls(("explode", {}), ("dawdle", {})), fake.text("ok")])

    report = await custom.run(request(key))

    exploded, dawdled = results(report)
    assert exploded.is_error and "RuntimeError: the fuse was short" in exploded.text()
    assert dawdled.is_error and "timed out" in dawdled.text()
    assert report.outcome == "completed"


async def test_parallel_calls_overlap_and_one_by_one_calls_do_not(custom: TurnRunner) -> None:
    for parallel in (True, False):
        key = new_key()
        a, b = f"{key}-a", f"{key}-b"
        custom.fake.script(
            key,
            [fake.tool_calls(("nap", {"label": a}), ("nap", {"label": b})), fake.text("ok")],
        )
        handle = await custom.start(request(key, parallel_tool_calls=parallel))
        report = await handle.result()

        assert [r.text() for r in results(report)] == [f"{a} rested", f"{b} rested"]
        # The history says it, not a clock: parallel calls are both scheduled before either
        # closes; one by one, the second is scheduled only after the first has closed.
        overlapped = ["scheduled", "scheduled", "closed", "closed"]
        one_by_one = ["scheduled", "closed", "scheduled", "closed"]
        assert await tool_call_steps(handle) == (overlapped if parallel else one_by_one)


async def tool_call_steps(handle: WorkflowHandle) -> list[str]:
    """ "scheduled" or "closed" for each tool-call activity event, in history order."""
    scheduled: set[int] = set()
    steps = []
    async for event in handle.fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            attributes = event.activity_task_scheduled_event_attributes
            if attributes.activity_type.name == ACTIVITY_TOOL_CALL:
                scheduled.add(event.event_id)
                steps.append("scheduled")
        elif _closed_activity_of(event) in scheduled:
            steps.append("closed")
    return steps


def _closed_activity_of(event: HistoryEvent) -> int | None:
    """The scheduled event id of an activity this event closes, if it closes one."""
    for attributes in (
        "activity_task_completed_event_attributes",
        "activity_task_failed_event_attributes",
        "activity_task_timed_out_event_attributes",
        "activity_task_canceled_event_attributes",
    ):
        if event.HasField(attributes):
            return getattr(event, attributes).scheduled_event_id
    return None


async def test_only_the_highest_priority_tier_runs(custom: TurnRunner) -> None:
    key = new_key()
    custom.fake.script(
        key,
        [
            fake.tool_calls(("nap", {"label": f"{key}-low"}), ("urgent", {})),
            fake.text("ok"),
        ],
    )

    report = await custom.run(request(key))

    deferred, ran = results(report)
    assert ran.text() == "urgent done"
    assert deferred.is_error and "Not run yet" in deferred.text() and "urgent" in deferred.text()
    assert f"{key}-low" not in RAN


async def test_invalid_arguments_are_sent_back_to_correct(custom: TurnRunner) -> None:
    key = new_key()
    custom.fake.script(
        key,
        [
            fake.tool_calls(("count", {"n": "three"})),
            fake.tool_calls(("count", {"n": 3})),
            fake.text("1 2 3"),
        ],
    )

    report = await custom.run(request(key))

    [invalid] = results(report, 2)
    [valid] = results(report, 4)
    assert invalid.is_error
    assert "argument 'n'" in invalid.text() and "integer" in invalid.text()
    assert "2 corrections left" in invalid.text() or "2 correction" in invalid.text()
    assert valid.text() == "1 2 3"
    assert report.tool_calls == 1  # the invalid call never ran


async def test_spent_correction_budget_fails_the_turn(custom: TurnRunner) -> None:
    key = new_key()
    custom.fake.script(key, [fake.tool_calls(("count", {}))] * 3)
    req = request(key)
    req["task"]["constraints"] = {"max_argument_corrections": 1}

    handle = await custom.start(req)
    with pytest.raises(WorkflowFailureError) as failure:
        await handle.result()

    error = failure.value.cause
    assert isinstance(error, ApplicationError)
    assert error.type == "ToolArgumentsInvalid"
    assert "max_argument_corrections=1" in error.message and "'n'" in error.message
    partial = AgentReport.model_validate(error.details[0])
    assert (partial.llm_calls, partial.tool_calls) == (2, 0)


async def test_external_tool_arguments_are_validated_before_waiting(turns: TurnRunner) -> None:
    key = new_key()
    ask = {
        "name": "ask_user",
        "input_schema": {
            "type": "object",
            "properties": {"question": {"type": "string"}},
            "required": ["question"],
        },
    }
    turns.fake.script(key, [fake.tool_calls(("ask_user", {"q": "?"})), fake.text("fine")])

    report = await turns.run(scripted_request(key, external_tools=[ask]))

    [result] = results(report)
    assert result.is_error and "missing required argument 'question'" in result.text()
