"""What a turn writes into history: each iteration's new content once, never the conversation
again, and never a payload over Temporal's limits. History bytes are deterministic enough to
assert (timings are not: those live in `bench/`); the ratio to a bare-Temporal floor of the same
turn runs the bench's own turns, in tests/test_bench_probes.py."""

from __future__ import annotations

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from turnkeeper.contracts.names import ACTIVITY_TOOL_CALL, QUERY_TRANSCRIPT
from turnkeeper.contracts.turn import AgentReport

from tests.conftest import TurnRunner, new_key, scripted_request
from tests.fakes import fake_anthropic as fake

_REFERENCE_TYPE = b"temporal.api.sdk.v1.ExternalStorageReference"


def _completed_result(events: list[HistoryEvent]) -> bytes:
    last = events[-1]
    assert last.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED
    [payload] = last.workflow_execution_completed_event_attributes.result.payloads
    return payload.metadata.get("messageType", b"")


async def test_a_report_over_256_kib_is_stored_and_read_back_whole(turns: TurnRunner) -> None:
    files = [f"big{i}.txt" for i in range(5)]
    for index, name in enumerate(files):
        (turns.workspace / name).write_text(f"{index}" * 60_000)
    key = new_key()
    turns.fake.script(
        key,
        [*(fake.tool_calls(("read_file", {"path": name})) for name in files), fake.text("read")],
    )

    handle = await turns.start(scripted_request(key, agent={"max_iterations": 8}))
    report = await handle.result()

    assert isinstance(report, AgentReport)
    assert len(report.model_dump_json()) > 256 * 1024
    assert report.output == "read"
    assert all(str(i) * 1000 in report.model_dump_json() for i in range(5))
    transcript = await handle.query(QUERY_TRANSCRIPT)
    assert len(transcript) == len(report.messages)
    events = [event async for event in handle.fetch_history_events()]
    assert _completed_result(events) == _REFERENCE_TYPE
    tool_results = _tool_result_payload_types(events)
    assert tool_results == [_REFERENCE_TYPE] * len(files)
    assert max(event.ByteSize() for event in events) < 4 * 1024


def _tool_result_payload_types(events: list[HistoryEvent]) -> list[bytes]:
    tool_calls = {
        event.event_id
        for event in events
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        and event.activity_task_scheduled_event_attributes.activity_type.name == ACTIVITY_TOOL_CALL
    }
    return [
        event.activity_task_completed_event_attributes.result.payloads[0].metadata.get(
            "messageType", b""
        )
        for event in events
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED
        and event.activity_task_completed_event_attributes.scheduled_event_id in tool_calls
    ]
