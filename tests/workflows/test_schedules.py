"""Scheduled turns on a real server (`turnkeeper/client/schedules.py`): a schedule's runs start
on their own and on `trigger`, are ordinary turns that name their schedule, are owned like the
schedule and billed to its tenant; every bad input is refused with nothing created.

The time-skipping test server does not implement Schedules (`CreateSchedule` is
"unimplemented" there), so these run on the dev server: a weekly schedule is triggered, and a
one-second interval shows the clock itself."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from temporalio.client import Client
from turnkeeper.contracts.schedules import InvalidSchedule, ScheduleView
from turnkeeper.contracts.search_attributes import STARTED_BY, TENANT_ID

from tests.conftest import TurnRunner, new_key, scripted_request
from tests.fakes import fake_anthropic as fake
from tests.support.waiting import until
from turnkeeper.client.client import turn
from turnkeeper.client.errors import InvalidTurnRequest
from turnkeeper.client.schedules import (
    ScheduleNotFound,
    ScheduleTaken,
    list_schedules,
    schedule_turn,
    turn_schedule,
)
from turnkeeper.client.tenants import tenant_spend

PRICE = {"input_per_mtok": 1_000.0, "output_per_mtok": 10_000.0}
USAGE = {"input_tokens": 10, "output_tokens": 5}  # $0.06 a call at PRICE


def priced_request(key: str, tenant: str) -> dict[str, Any]:
    return scripted_request(key, agent={"price": PRICE, "max_tokens": 10}, tenant=tenant)


async def runs_done(view_of: Any, count: int) -> ScheduleView:
    return await until(
        view_of,
        lambda v: len(v.recent_runs) >= count and not v.running,
        f"{count} runs of the schedule started and ended",
    )


async def test_a_triggered_run_is_a_turn_of_its_schedule_billed_to_its_tenant(
    turns: TurnRunner,
) -> None:
    key, name, tenant = new_key(), f"weekly-{new_key()}", f"acme-{new_key()}"
    turns.fake.script(key, [fake.text("Digest written.", usage=USAGE)])
    schedule = await schedule_turn(
        turns.client,
        name,
        priced_request(key, tenant),
        cron="0 9 * * MON",
        paused=True,
        task_queue=turns.task_queue,
        started_by="alice",
    )
    created = await schedule.describe()
    assert (created.cron, created.paused, created.overlap) == ("0 9 * * MON", True, "skip")
    assert created.next_runs[0].weekday() == 0 and created.next_runs[0].hour == 9
    assert created.request.tenant == tenant and created.started_by == "alice"

    await schedule.trigger()  # paused: only the trigger starts a run
    [run] = (await runs_done(schedule.describe, 1)).recent_runs
    assert run.workflow_id.startswith(f"schedule:{name}-")
    handle = turn(turns.client, run.workflow_id)
    report = await handle.result()
    assert (report.outcome, report.schedule, report.tenant) == ("completed", name, tenant)
    assert report.started_by == "alice"
    assert (await handle.status()).schedule == name
    attributes = (await handle.workflow.describe()).typed_search_attributes
    assert (attributes.get(TENANT_ID), attributes.get(STARTED_BY)) == (tenant, "alice")
    spend = await tenant_spend(turns.client, tenant)
    assert abs(spend.spent_day_usd - 0.06) < 1e-9

    listed = await until(
        lambda: list_schedules(turns.client, started_by="alice"),
        lambda views: name in [v.name for v in views],
        "the schedule listed for its owner",
    )
    assert all(v.started_by == "alice" for v in listed)
    await schedule.resume("go")
    assert not (await schedule.describe()).paused
    await schedule.delete()
    with pytest.raises(ScheduleNotFound):
        await turn_schedule(turns.client, name).describe()


async def test_an_interval_starts_runs_on_its_own(turns: TurnRunner) -> None:
    key, name = new_key(), f"every-{new_key()}"
    turns.fake.script(key, [fake.text(f"Run {n}.") for n in range(6)])
    schedule = await schedule_turn(
        turns.client,
        name,
        scripted_request(key),
        every=timedelta(seconds=1),
        task_queue=turns.task_queue,
    )
    try:
        view = await runs_done(schedule.describe, 2)
    finally:
        await schedule.pause()
    assert view.every == "1s" and view.runs >= 2
    for run in view.recent_runs[:2]:
        report = await turn(turns.client, run.workflow_id).result()
        assert report.schedule == name and report.started_by is None
    await schedule.delete()


BAD = [
    ({"cron": "not a cron"}, InvalidSchedule, "--cron 'not a cron': Invalid schedule spec"),
    ({"cron": "99 * * * *"}, InvalidSchedule, "Minute is not in range"),
    ({"every": "a week"}, InvalidSchedule, "--every 'a week': not a duration"),
    ({"every": "0s"}, InvalidSchedule, "at most once a second"),
    ({}, InvalidSchedule, "give one of --cron and --every"),
    ({"cron": "@daily", "every": "1h"}, InvalidSchedule, "give one of --cron and --every"),
    ({"cron": "@daily", "overlap": "queue"}, InvalidSchedule, "--overlap 'queue'"),
]


@pytest.mark.parametrize(("options", "error", "says"), BAD)
async def test_a_bad_clock_creates_nothing(
    client: Client, options: dict[str, Any], error: type[Exception], says: str
) -> None:
    name = f"bad-{new_key()}"
    with pytest.raises(error) as refused:
        await schedule_turn(client, name, scripted_request(new_key()), **options)
    assert says in str(refused.value)
    with pytest.raises(ScheduleNotFound):
        await turn_schedule(client, name).describe()


async def test_a_bad_name_or_request_creates_nothing(client: Client) -> None:
    with pytest.raises(InvalidSchedule, match="is not one"):
        await schedule_turn(client, "no/slashes", scripted_request(new_key()), cron="@daily")
    name = f"bad-{new_key()}"
    invalid = scripted_request(new_key(), agent={"max_iterations": 0})
    with pytest.raises(InvalidTurnRequest, match="max_iterations"):
        await schedule_turn(client, name, invalid, cron="@daily")
    with pytest.raises(ScheduleNotFound):
        await turn_schedule(client, name).describe()


async def test_a_taken_name_is_refused_and_keeps_its_schedule(client: Client) -> None:
    name = f"taken-{new_key()}"
    first = await schedule_turn(client, name, scripted_request("first"), cron="@weekly")
    with pytest.raises(ScheduleTaken, match=name):
        await schedule_turn(client, name, scripted_request("second"), every="1h")
    view = await first.describe()
    assert (view.cron, view.request.agent.system_prompt) == (
        "@weekly",
        "You are a test agent. [script:first]",
    )
    await first.delete()
