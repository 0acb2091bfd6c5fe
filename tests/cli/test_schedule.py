"""`turnkeeper schedule …` against the dev server: a schedule created from an agent file runs
its turns, every command reads and changes it, and a bad agent file, cron expression or interval
is refused with nothing created. One round trip runs the command as its own process."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from temporalio.client import Client

from tests.conftest import TurnRunner, new_key, scripted_request
from tests.fakes import fake_anthropic as fake
from tests.support.console_runs import (  # noqa: F401 (restore_logging: an autouse fixture)
    address_of,
    invoke,
    restore_logging,
)
from tests.support.waiting import until
from turnkeeper.client.client import turn
from turnkeeper.client.schedules import ScheduleNotFound, turn_schedule

CONSOLE = str(Path(sys.executable).with_name("turnkeeper"))


def agent_file(tmp_path: Path, key: str) -> Path:
    path = tmp_path / "agent.json"
    path.write_text(json.dumps(scripted_request(key)["agent"]), encoding="utf-8")
    return path


async def test_a_schedule_from_an_agent_file_is_shown_triggered_paused_and_deleted(
    turns: TurnRunner, tmp_path: Path
) -> None:
    key, name = new_key(), f"cli-{new_key()}"
    turns.fake.script(key, [fake.text("Tickets summarised.")])
    address = address_of(turns.client)
    created = await invoke(
        "schedule", "create", name, "--agent", str(agent_file(tmp_path, key)),
        "--task", "Summarise the tickets", "--cron", "0 9 * * MON", "--tenant", "acme",
        "--task-queue", turns.task_queue, *address,
    )  # fmt: skip
    assert created.exit_code == 0, created.output
    assert f"created schedule {name!r}" in created.stdout
    assert "cron 0 9 * * MON (overlap: skip)" in created.stdout

    triggered = await invoke("schedule", "trigger", name, *address)
    assert triggered.exit_code == 0, triggered.output
    view = await until(
        turn_schedule(turns.client, name).describe,
        lambda v: v.recent_runs and not v.running,
        "the triggered run ended",
    )
    report = await turn(turns.client, view.recent_runs[0].workflow_id).result()
    assert (report.schedule, report.tenant, report.task_id) == (name, "acme", name)

    paused = await invoke("schedule", "pause", name, *address)
    shown = await invoke("schedule", "show", name, "--json", *address)
    assert paused.exit_code == 0 and shown.exit_code == 0, paused.output + shown.output
    seen = json.loads(shown.stdout)
    assert (seen["paused"], seen["runs"], seen["request"]["tenant"]) == (True, 1, "acme")
    listed = await until(
        lambda: invoke("schedule", "list", "--json", *address),
        lambda done: name in done.stdout,
        "the schedule listed",
    )
    assert [v["cron"] for v in json.loads(listed.stdout) if v["name"] == name] == ["0 9 * * MON"]

    deleted = await invoke("schedule", "delete", name, *address)
    again = await invoke("schedule", "delete", name, *address)
    assert deleted.exit_code == 0, deleted.output
    assert again.exit_code == 1 and f"no schedule of turns named {name!r}" in again.output


BAD = [
    (["--cron", "every monday"], "--cron 'every monday': Invalid schedule spec"),
    (["--every", "weekly"], "--every 'weekly': not a duration"),
    (["--cron", "@daily", "--every", "1h"], "give one of --cron and --every"),
    (["--cron", "@daily", "--overlap", "queue"], "--overlap 'queue'"),
]


@pytest.mark.parametrize(("clock", "says"), BAD)
async def test_a_bad_clock_is_refused_and_creates_nothing(
    client: Client, tmp_path: Path, clock: list[str], says: str
) -> None:
    name = f"bad-{new_key()}"
    refused = await invoke(
        "schedule", "create", name, "--agent", str(agent_file(tmp_path, new_key())),
        "--task", "t", *clock, *address_of(client),
    )  # fmt: skip
    assert refused.exit_code == 2 and says in refused.output, refused.output
    with pytest.raises(ScheduleNotFound):
        await turn_schedule(client, name).describe()


async def test_an_agent_file_that_does_not_validate_is_refused_and_creates_nothing(
    client: Client, tmp_path: Path
) -> None:
    name, path = f"bad-{new_key()}", tmp_path / "agent.json"
    path.write_text(json.dumps({"id": "a", "model": "demo:x", "max_iterations": 0}))
    refused = await invoke(
        "schedule", "create", name, "--agent", str(path), "--task", "t", "--cron", "@daily",
        *address_of(client),
    )  # fmt: skip
    assert refused.exit_code == 2, refused.output
    assert "invalid request: agent.max_iterations" in refused.output
    with pytest.raises(ScheduleNotFound):
        await turn_schedule(client, name).describe()


async def test_the_command_as_its_own_process_creates_a_schedule_whose_run_is_a_turn(
    turns: TurnRunner, tmp_path: Path
) -> None:
    key, name = new_key(), f"process-{new_key()}"
    turns.fake.script(key, [fake.text("Done on time.")])
    command = [
        CONSOLE, "schedule", "create", name, "--agent", str(agent_file(tmp_path, key)),
        "--task", "Check the refunds", "--every", "7d", "--paused", "--json",
        "--task-queue", turns.task_queue, *address_of(turns.client),
    ]  # fmt: skip
    done = await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    created = json.loads(done.stdout)
    assert (created["name"], created["every"], created["paused"]) == (name, "7d", True)

    schedule = turn_schedule(turns.client, name)
    await schedule.trigger()
    view = await until(schedule.describe, lambda v: v.recent_runs, "the run started")
    report = await turn(turns.client, view.recent_runs[0].workflow_id).result()
    assert report.schedule == name and report.outcome == "completed"
    await schedule.delete()
