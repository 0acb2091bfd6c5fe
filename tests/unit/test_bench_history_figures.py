"""`bench.history_figures` counts both sides of the long-turn figure (ours and the peers'): the
bytes and events of every run, the largest event, the model calls that completed and how the last
run ended, read from the events alone."""

from __future__ import annotations

from temporalio.api.enums.v1 import EventType, WorkflowTaskFailedCause
from temporalio.api.history.v1 import HistoryEvent

from bench.history_figures import chain_figures, completed


def _event(event_id: int, kind: int) -> HistoryEvent:
    return HistoryEvent(event_id=event_id, event_type=kind)


def _model_call(first_id: int, name: str, input_bytes: int) -> list[HistoryEvent]:
    scheduled = _event(first_id, EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
    scheduled.activity_task_scheduled_event_attributes.activity_type.name = name
    scheduled.activity_task_scheduled_event_attributes.input.payloads.add(data=b"x" * input_bytes)
    done = _event(first_id + 1, EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED)
    done.activity_task_completed_event_attributes.scheduled_event_id = first_id
    return [scheduled, done]


def test_a_chain_is_counted_over_every_run_and_its_largest_event_named() -> None:
    first = [_event(1, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED), *_model_call(2, "m", 10)]
    first.append(_event(4, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW))
    second = [*_model_call(1, "m", 5000), *_model_call(3, "tool", 9000)]
    second.append(_event(5, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED))

    figures = chain_figures([first, second], lambda name: name == "m")

    assert figures["runs"] == 2 and figures["events"] == 9
    assert figures["history_bytes"] == sum(e.ByteSize() for e in [*first, *second])
    assert figures["run_bytes"][1] > figures["run_bytes"][0]
    assert figures["largest_event_type"] == "ACTIVITY_TASK_SCHEDULED"
    assert 9000 < figures["largest_event_bytes"] < 9100
    assert figures["model_calls_completed"] == 2
    assert completed(figures)


def test_a_run_the_server_ended_says_why() -> None:
    refused = _event(3, EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED)
    refused.workflow_task_failed_event_attributes.cause = (
        WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_BAD_SCHEDULE_ACTIVITY_ATTRIBUTES
    )
    refused.workflow_task_failed_event_attributes.failure.message = "input exceeds size limit"
    ended = _event(4, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED)
    ended.workflow_execution_terminated_event_attributes.reason = "history size exceeds limit"
    run = [_event(1, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED), *_model_call(1, "m", 1)]

    figures = chain_figures([[*run, refused, ended]], lambda name: name == "m")

    assert not completed(figures)
    assert figures["ending"] == {
        "last_event": "WORKFLOW_EXECUTION_TERMINATED",
        "reason": "history size exceeds limit",
        "workflow_task_failure": "WORKFLOW_TASK_FAILED_CAUSE_BAD_SCHEDULE_ACTIVITY_ATTRIBUTES: "
        "input exceeds size limit",
    }
