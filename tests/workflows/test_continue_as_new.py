"""A long turn continues as new when Temporal suggests it, invisibly to callers: same workflow id,
queries and the final report see the whole turn."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment
from turnkeeper.contracts.names import (
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
    running_worker,
    scripted_request,
    temporal_binary,
)
from turnkeeper.testing import fake_anthropic as fake
from turnkeeper.testing.fake_anthropic import FakeAnthropic

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
