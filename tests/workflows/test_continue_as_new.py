"""A long turn continues as new when Temporal suggests it, invisibly to callers: same workflow id,
queries and the final report see the whole turn."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment
from turnkeeper.contracts.messages import Message, TextBlock
from turnkeeper.contracts.names import (
    ACTIVITY_DESCRIBE_SKILLS,
    QUERY_STATUS,
    QUERY_TRANSCRIPT,
    SEARCH_ATTRIBUTES,
    WORKFLOW_TYPE,
)
from turnkeeper.contracts.signals import TurnStatus
from turnkeeper.contracts.turn import AgentReport

from tests.conftest import (
    SA_KEYS,
    make_settings,
    new_key,
    providers_for,
    running_worker,
    scripted_request,
    temporal_binary,
)
from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.support.skill_folders import REFUND_POLICY, REFUNDS, skills_worker

ITERATIONS = 15


@pytest.fixture(scope="module")
async def eager_env() -> AsyncIterator[WorkflowEnvironment]:
    """A dev server that suggests continue-as-new after 60 history events (default: thousands),
    so that a 15-iteration turn crosses several runs."""
    env = await WorkflowEnvironment.start_local(
        data_converter=pydantic_data_converter,
        dev_server_existing_path=temporal_binary("temporal"),
        search_attributes=[SA_KEYS[kind](name) for name, kind in SEARCH_ATTRIBUTES.items()],
        dev_server_extra_args=[
            "--dynamic-config-value",
            "limit.historyCount.suggestContinueAsNew=60",
        ],
    )
    async with env:
        yield env


async def run_ids(client: Client, workflow_id: str) -> list[str]:
    return [
        execution.run_id
        async for execution in client.list_workflows(f'WorkflowId = "{workflow_id}"')
    ]


async def test_a_long_turn_continues_as_new_invisibly(
    eager_env: WorkflowEnvironment, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    client = eager_env.client
    key = new_key()
    steps = [fake.tool_calls(("list_files", {"path": "."}))] * ITERATIONS
    fake_anthropic.script(key, [*steps, fake.text("All done.")])
    settings = make_settings(tmp_path, f"tq-{uuid.uuid4()}")
    workflow_id = f"turn-{uuid.uuid4()}"

    async with running_worker(client, settings, fake_anthropic):
        handle = await client.start_workflow(
            WORKFLOW_TYPE,
            scripted_request(key, agent={"max_iterations": ITERATIONS + 1}),
            id=workflow_id,
            task_queue=settings.task_queue,
            result_type=AgentReport,
        )
        report = await handle.result()  # follows the runs, as every caller's handle does
        status = await handle.query(QUERY_STATUS, result_type=TurnStatus)
        transcript = await handle.query(QUERY_TRANSCRIPT)

    assert report.output == "All done."
    assert (report.llm_calls, report.tool_calls, report.iterations) == (16, 15, 16)
    assert len(report.messages) == 2 * ITERATIONS + 2
    assert (status.state, status.llm_calls) == ("completed", 16)
    assert len(transcript) == len(report.messages)
    # The model saw the whole conversation on every call, across runs.
    last_request = fake_anthropic.requests_for(key)[-1].body
    assert len(last_request["messages"]) == 2 * ITERATIONS + 1
    assert len(await run_ids(client, workflow_id)) > 1


async def test_a_turn_with_skills_asks_for_them_once_across_runs(
    eager_env: WorkflowEnvironment, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    """What the worker said of the skills, and the skills loaded, cross continue-as-new: no
    run asks again, and a skill's tool is still offered and runs in a later run."""
    client = eager_env.client
    key = new_key()
    steps = [fake.tool_calls(("list_files", {"path": "."}))] * (ITERATIONS - 2)
    fake_anthropic.script(
        key,
        [
            fake.tool_calls(("load_skill", {"name": REFUND_POLICY})),
            *steps,
            fake.tool_calls(("refund", {"order": "A17"})),
            fake.text("Refunded."),
        ],
    )
    settings = make_settings(tmp_path, f"tq-{uuid.uuid4()}")
    request = scripted_request(
        key, agent={"max_iterations": ITERATIONS + 1, "skills": [REFUND_POLICY]}
    )

    async with skills_worker(client, settings, providers_for(fake_anthropic), [REFUNDS]):
        handle = await client.start_workflow(
            WORKFLOW_TYPE,
            request,
            id=f"turn-{uuid.uuid4()}",
            task_queue=settings.task_queue,
            result_type=AgentReport,
        )
        report = await handle.result()

    assert report.skills_loaded == [REFUND_POLICY]
    assert report.messages[-2].content[0].text() == "refunded order A17"
    runs = await run_ids(client, handle.id)
    assert len(runs) > 1
    described = 0
    for run_id in runs:
        run = client.get_workflow_handle(handle.id, run_id=run_id)
        async for event in run.fetch_history_events():
            scheduled = event.activity_task_scheduled_event_attributes
            described += scheduled.activity_type.name == ACTIVITY_DESCRIBE_SKILLS
    assert described == 1


# The arguments a run of main at 272ef87 (before `Turn` was made of parts) handed its next run;
# `made_on` in the file names the commit, `how` says how it was made.
CARRIED_ON_MAIN = Path(__file__).parent / "carried" / "turn_at_272ef87.json"


async def test_a_turn_carried_by_an_older_build_continues_on_this_one(
    client: Client, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    """A run that continues as new during a deploy hands its state to the new build: the new
    code goes on from it, and the report holds what the earlier runs did as well."""
    fixture = json.loads(CARRIED_ON_MAIN.read_text())
    key = fixture["request"]["agent"]["system_prompt"].split("[script:")[1].rstrip("]")
    # The fake answers by the count of assistant messages it is sent: the carried conversation
    # (its earlier exchange too, compacted) holds three.
    fake_anthropic.script(key, [*[fake.text("unused")] * 3, fake.text("Four.")])
    settings = make_settings(tmp_path, f"tq-{uuid.uuid4()}")

    # The carried turn described the refund skill: its worker serves it.
    async with skills_worker(client, settings, providers_for(fake_anthropic), [REFUNDS]):
        handle = await client.start_workflow(
            WORKFLOW_TYPE,
            args=[fixture["request"], fixture["carried"]],
            id=f"turn-{uuid.uuid4()}",
            task_queue=settings.task_queue,
            result_type=AgentReport,
        )
        report = await handle.result()
        status = await handle.query(QUERY_STATUS, result_type=TurnStatus)

    carried = fixture["carried"]["turn"]
    assert report.output == "Four."
    assert (report.iterations, report.tool_calls) == (carried["iteration"] + 1, 2)
    assert report.llm_calls == carried["model_calls"] + 1
    assert report.cost_usd > carried["cost_usd"]
    assert report.started_by == carried["started_by"]
    assert report.models_used == carried["models_used"]
    assert [d.model_dump(mode="json") for d in report.decisions] == carried["decisions"]
    extensions = [e.model_dump(mode="json") for e in report.budget_extensions]
    assert extensions == carried["budget_extensions"]
    assert [s.model_dump(mode="json") for s in report.subagents] == carried["subagents"]
    assert report.skills_loaded == carried["skills_loaded"]
    # The steer queued before the carry joined the carried conversation's last message.
    assert [i.text for i in report.interventions] == ["Be brief.", "Use the table."]
    *before, last = [Message.model_validate(m) for m in carried["messages"]]
    assert report.messages[: len(before)] == before
    assert report.messages[len(before)].content == [*last.content, TextBlock(text="Use the table.")]
    assert status.refused_decisions_dropped == carried["refused_decisions_dropped"]
    assert status.capacity_wait_ms == carried["capacity_wait_ms"]
