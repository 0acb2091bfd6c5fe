"""The content store promise of a turn: when the conversation object its next model call names
has vanished from the store, the turn sends the whole conversation inline instead of failing,
and the model sees the same conversation it would have seen.

A worker keeps the conversations it wrote in memory, so the loss shows on a worker that did not
write them: the first worker stops while the turn waits for an approval, the store loses
everything, and a fresh worker on the same task queue and store takes the turn over."""

from __future__ import annotations

import uuid
from pathlib import Path

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from turnkeeper.contracts import errors
from turnkeeper.contracts.names import ACTIVITY_MODEL_CALL, SIGNAL_APPROVE

from tests.conftest import (
    TurnRunner,
    make_settings,
    new_key,
    running_worker,
    scripted_request,
    wait_for_pending,
)
from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import FakeAnthropic

WRITE = ("write_file", {"path": "kept.md", "content": "kept"})


async def test_a_turn_whose_stored_conversation_vanished_sends_it_inline(
    client: Client, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    settings = make_settings(tmp_path, f"tq-{uuid.uuid4()}")
    turns = TurnRunner(client, settings.task_queue, settings, fake_anthropic)
    key = new_key()
    turns.fake.script(key, [fake.tool_calls(WRITE), fake.text("Done.")])
    async with running_worker(client, settings, fake_anthropic):
        handle = await turns.start(scripted_request(key))
        [call] = (await wait_for_pending(handle)).pending

    stored = [path for path in settings.store_dir.rglob("*") if path.is_file()]
    assert stored, "the first model call stored the conversation"
    for path in stored:
        path.unlink()
    async with running_worker(client, settings, fake_anthropic):
        await handle.signal(SIGNAL_APPROVE, {"call_id": call.call_id, "approved": True})
        report = await handle.result()

    assert (report.outcome, report.output) == ("completed", "Done.")
    first, second = turns.fake.requests_for(key)
    # The model reads the conversation the store lost: the task, its tool call and the result.
    task, asked, answered = second.body["messages"]
    assert [task] == first.body["messages"]
    assert (asked["role"], asked["content"][0]["name"]) == ("assistant", "write_file")
    assert answered["content"][0]["type"] == "tool_result"
    # History says why there was a second attempt at the call: the store missed the content.
    failures = [
        event.activity_task_failed_event_attributes.failure.application_failure_info.type
        async for event in handle.fetch_history_events()
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED
    ]
    assert failures == [errors.CONTENT_MISSING]
    model_calls = [
        event
        async for event in handle.fetch_history_events()
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        and event.activity_task_scheduled_event_attributes.activity_type.name == ACTIVITY_MODEL_CALL
    ]
    assert len(model_calls) == 3
