"""The fast path for cheap tools: calls of a `local` worker tool run as local activities, in the
worker that runs the turn's workflow task, with one history event each and no round trip through
the server. Everything else about a call (results, errors, the model's view) is unchanged. It is
opt-in: the built-in tools stay activities, whose summaries the Web UI lists. (Which tools may be
local, and their time limit: tests/unit/activities/tools/test_registry.py.) On the test kit:
a ScriptedModel and the `turn_env` fixture, as an application's tests run."""

from __future__ import annotations

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from turnkeeper.activities.tools.registry import (
    ToolError,
    worker_tool,
)
from turnkeeper.contracts.messages import ToolResultBlock
from turnkeeper.contracts.names import ACTIVITY_TOOL_CALL

from turnkeeper.testing import ScriptedModel, call, reply
from turnkeeper.testing.pytest_plugin import EnvironmentFactory


def _scheduled_tool_activities(events: list[HistoryEvent]) -> int:
    return sum(
        event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        and event.activity_task_scheduled_event_attributes.activity_type.name == ACTIVITY_TOOL_CALL
        for event in events
    )


def local_tool_markers(events: list[HistoryEvent]) -> list[HistoryEvent]:
    """The markers that record local `tool_call` activities, in history order."""
    return [
        event
        for event in events
        if event.event_type == EventType.EVENT_TYPE_MARKER_RECORDED
        and event.marker_recorded_event_attributes.marker_name == "core_local_activity"
        and b'"activity_type":"tool_call"'
        in event.marker_recorded_event_attributes.details["data"].payloads[0].data
    ]


@worker_tool(local=True, timeout_s=5)
def lookup(key: str) -> str:
    """Look a key up in a small in-memory table."""
    if key not in _TABLE:
        raise ToolError(f"no entry {key!r}")
    return _TABLE[key]


_TABLE = {"a": "alpha", "b": "beta"}


async def test_a_local_tool_runs_in_the_workflow_task_and_answers_as_before(
    turn_env: EnvironmentFactory,
) -> None:
    model = ScriptedModel(
        [
            [call("lookup", key="a"), call("lookup", key="b")],
            [call("lookup", key="zzz"), call("lookup", wrong=1)],
            reply("done"),
        ]
    )
    async with turn_env(tools=[lookup], model=model) as env:
        handle = await env.start_turn("Look a and b up.")
        report = await handle.result()
        events = [event async for event in handle.workflow.fetch_history_events()]

    first = [b for b in report.messages[2].content if isinstance(b, ToolResultBlock)]
    assert [b.text() for b in first] == ["alpha", "beta"]
    missing, invalid = [b for b in report.messages[4].content if isinstance(b, ToolResultBlock)]
    assert missing.is_error and "no entry 'zzz'" in missing.text()
    assert invalid.is_error  # refused by the schema check before anything ran
    assert _scheduled_tool_activities(events) == 0
    markers = local_tool_markers(events)
    assert len(markers) == 3
    # Both calls of the first response ran side by side, within one workflow task.
    assert not [
        e
        for e in events
        if markers[0].event_id < e.event_id < markers[1].event_id
        and e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
    ]


async def test_other_tools_of_the_same_turn_still_run_as_activities(
    turn_env: EnvironmentFactory,
) -> None:
    model = ScriptedModel(
        [[call("lookup", key="a"), call("read_file", path="notes.md")], reply("")]
    )
    async with turn_env(tools=[lookup], model=model, builtin_tools=True) as env:
        (env.workspace / "notes.md").write_text("hello\n")
        handle = await env.start_turn("Look a up and read the notes.")
        report = await handle.result()
        events = [event async for event in handle.workflow.fetch_history_events()]

    texts = [b.text() for b in report.messages[2].content if isinstance(b, ToolResultBlock)]
    assert texts == ["alpha", "hello\n"]
    assert _scheduled_tool_activities(events) == 1
    assert len(local_tool_markers(events)) == 1
