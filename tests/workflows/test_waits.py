"""The built-in `wait` tool: a 3-day wait on the time-skipping server, waits a steer or an
interrupt ends early, an event delivered to a waiting turn (twice: read once), and the calls a
turn refuses (a clear error result to the model, no timer)."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from pathlib import Path

from temporalio.client import Client, WorkflowHandle
from temporalio.testing import WorkflowEnvironment
from turnkeeper.contracts.messages import ToolResultBlock
from turnkeeper.contracts.names import (
    QUERY_STATUS,
    UPDATE_INTERRUPT,
    UPDATE_STEER,
    WORKFLOW_TYPE,
)
from turnkeeper.contracts.signals import TurnStatus
from turnkeeper.contracts.turn import AgentReport
from turnkeeper.contracts.waits import SIGNAL_EVENT

from tests.conftest import (
    TurnRunner,
    make_settings,
    new_key,
    run_on_server,
    running_worker,
    scripted_request,
)
from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.support import history_facts
from tests.support.console_runs import (  # noqa: F401 (restore_logging: an autouse fixture)
    address_of,
    invoke,
    restore_logging,
)
from tests.support.waiting import until

THREE_DAYS_S = 3 * 24 * 3600


def waiting_request(key: str, **task: object) -> dict[str, object]:
    return scripted_request(key, agent={"tools": ["wait"]}, task=task)


def results(report: AgentReport) -> list[ToolResultBlock]:
    return [
        block
        for message in report.messages
        for block in message.content
        if isinstance(block, ToolResultBlock)
    ]


async def waiting_status(handle: WorkflowHandle) -> TurnStatus:
    return await until(
        lambda: handle.query(QUERY_STATUS, result_type=TurnStatus),
        lambda status: status.state == "waiting",
        "the turn waiting",
    )


async def test_a_three_day_wait_ends_by_its_timer_outside_the_time_budget(
    skipping_env: WorkflowEnvironment, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    key = new_key()
    fake_anthropic.script(
        key,
        [
            fake.tool_calls(("wait", {"seconds": THREE_DAYS_S, "reason": "refund settles"})),
            fake.text("Checked back on the refund."),
        ],
    )
    settings = make_settings(tmp_path, f"tq-{uuid.uuid4()}")
    # One minute of work allowed: three days of waiting are not work.
    request = waiting_request(key, constraints={"time_budget_ms": 60_000})

    workflow_id = f"turn-{uuid.uuid4()}"
    client = skipping_env.client
    report = await run_on_server(client, settings, fake_anthropic, request, workflow_id=workflow_id)

    assert report.outcome == "completed"
    [waited] = results(report)
    assert not waited.is_error
    assert waited.text().startswith("Waited until ")
    assert report.duration_ms >= THREE_DAYS_S * 1000
    [first, _] = fake_anthropic.requests_for(key)
    assert "wait" in [tool["name"] for tool in first.body["tools"]]
    # Three days and nothing in history between the timer's start and its firing: no polling.
    events = await history_facts.events(client.get_workflow_handle(workflow_id))
    [started] = [i for i, e in enumerate(events) if e.HasField("timer_started_event_attributes")]
    assert events[started + 1].HasField("timer_fired_event_attributes")


async def test_a_steer_wakes_a_waiting_turn_and_status_says_what_it_waits_for(
    turns: TurnRunner,
) -> None:
    key = new_key()
    turns.fake.script(
        key,
        [
            fake.tool_calls(("wait", {"seconds": 3600, "reason": "deploy window"})),
            fake.text("Woken, carrying on."),
        ],
    )
    handle = await turns.start(waiting_request(key))

    status = await waiting_status(handle)
    [wait] = status.waiting_for
    assert wait.reason == "deploy window"
    assert wait.until is not None and wait.until - wait.since == timedelta(hours=1)
    await handle.execute_update(UPDATE_STEER, {"message": "Go now.", "author": "alice"})
    report = await handle.result()

    [woken] = results(report)
    assert "by a steer from alice" in woken.text()
    assert "Go now." in json.dumps(turns.fake.requests_for(key)[-1].body["messages"])
    assert report.duration_ms < 3_600_000


async def test_an_interrupt_wakes_a_waiting_turn_with_its_partial_report(
    turns: TurnRunner,
) -> None:
    key = new_key()
    turns.fake.script(key, [fake.tool_calls(("wait", {"seconds": 3600, "reason": "r"}))])
    handle = await turns.start(waiting_request(key))

    await waiting_status(handle)
    await handle.execute_update(UPDATE_INTERRUPT, {"reason": "enough", "author": "bob"})
    report = await handle.result()

    assert report.outcome == "interrupted"
    assert len(turns.fake.requests_for(key)) == 1
    status = await handle.query(QUERY_STATUS, result_type=TurnStatus)
    assert status.state == "interrupted" and status.waiting_for == []


async def test_an_event_delivered_twice_wakes_the_wait_once(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(
        key,
        [
            fake.tool_calls(("wait", {"event": "deploy-finished", "reason": "notes"})),
            fake.tool_calls(("wait", {"event": "deploy-finished", "seconds": 1, "reason": "2"})),
            fake.text("Release notes written."),
        ],
    )
    handle = await turns.start(waiting_request(key))
    event = {
        "key": "deploy-42",
        "event": "deploy-finished",
        "idempotency_id": "delivery-1",
        "payload": {"version": "1.4.2"},
    }

    await waiting_status(handle)
    await handle.signal(SIGNAL_EVENT, event)
    await handle.signal(SIGNAL_EVENT, event)  # a webhook's retry
    report = await handle.result()

    first, second = results(report)
    assert json.loads(first.text()) == {"event": "deploy-finished", "payload": {"version": "1.4.2"}}
    # The retry was dropped: the second wait for the same name ran out its second.
    assert second.text().startswith("No event 'deploy-finished' arrived")


async def test_waits_that_cannot_be_are_error_results_and_start_no_timer(
    turns: TurnRunner,
) -> None:
    key = new_key()
    calls = [
        ("wait", {"until": "next tuesday", "reason": "unparsable"}),
        ("wait", {"until": "2020-01-01T00:00:00+00:00", "reason": "past"}),
        ("wait", {"seconds": 400 * 24 * 3600, "reason": "past the maximum"}),
        ("wait", {"reason": "no target"}),
        ("wait", {"seconds": 10, "until": "2099-01-01T00:00:00+00:00", "reason": "both"}),
    ]
    turns.fake.script(key, [fake.tool_calls(*calls), fake.text("I will not wait.")])
    handle = await turns.start(waiting_request(key))
    report = await handle.result()

    problems = [result.text() for result in results(report)]
    assert all(result.is_error for result in results(report))
    assert "is not an ISO-8601 time" in problems[0]
    assert "is in the past" in problems[1]
    assert "the operator's maximum" in problems[2] and "30 days" in problems[2]
    assert "Give `until`, `seconds` or `event`" in problems[3]
    assert "not both" in problems[4]
    assert report.outcome == "completed"
    events = await history_facts.events(handle)
    assert not [e for e in events if e.HasField("timer_started_event_attributes")]


async def test_a_wait_outlives_its_worker_and_is_listed_by_turnkeeper_waiting(
    client: Client, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    key = new_key()
    fake_anthropic.script(
        key,
        [
            fake.tool_calls(("wait", {"event": "approved-upstream", "reason": "upstream"})),
            fake.text("Upstream said yes."),
        ],
    )
    settings = make_settings(tmp_path, f"tq-{uuid.uuid4()}")
    # No cache, so no sticky queue: the second worker takes the turn over at once.
    async with running_worker(client, settings, fake_anthropic, max_cached_workflows=0):
        handle = await client.start_workflow(
            WORKFLOW_TYPE,
            waiting_request(key),
            id=f"turn-{uuid.uuid4()}",
            task_queue=settings.task_queue,
            result_type=AgentReport,
        )
        await waiting_status(handle)
    # The worker is gone; a new one answers the listing and takes the event.
    async with running_worker(client, settings, fake_anthropic):
        listed = await until(
            lambda: invoke("waiting", "--task-queue", settings.task_queue, *address_of(client)),
            lambda result: handle.id in result.stdout,
            "the turn listed by turnkeeper waiting",
        )
        event = {"key": "k", "event": "approved-upstream", "idempotency_id": "u-1", "payload": 1}
        await handle.signal(SIGNAL_EVENT, event)
        report = await handle.result()

    assert "waiting for event `approved-upstream`" in listed.stdout
    assert "upstream" in listed.stdout
    [result] = results(report)
    assert json.loads(result.text())["payload"] == 1
    assert len(fake_anthropic.requests_for(key)) == 2
