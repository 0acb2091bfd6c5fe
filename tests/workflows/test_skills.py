"""`agent.skills` in a turn on a real server with the scripted fake model: the model sees the
skill listed, loads it, calls the tool it brings; the report, the history's activity summaries
and the first request show it. A skill the worker lacks fails the turn at its start."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.client import Client, WorkflowHandle
from turnkeeper.contracts import errors

from tests.conftest import (
    TurnRunner,
    failure_of,
    make_settings,
    new_key,
    providers_for,
    scripted_request,
)
from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.support.skill_folders import (
    DESCRIPTION,
    INSTRUCTIONS,
    REFUND_POLICY,
    REFUNDS,
    skills_worker,
)


@pytest.fixture
async def turns(
    client: Client, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> AsyncIterator[TurnRunner]:
    settings = make_settings(tmp_path, f"tq-{uuid.uuid4()}")
    async with skills_worker(client, settings, providers_for(fake_anthropic), [REFUNDS]):
        yield TurnRunner(client, settings.task_queue, settings, fake_anthropic)


async def summaries(client: Client, handle: WorkflowHandle) -> list[str]:
    """The Web UI's summary of each activity the turn scheduled, in order."""
    found = []
    async for event in handle.fetch_history_events():
        if event.HasField("activity_task_scheduled_event_attributes"):
            [summary] = await client.data_converter.decode([event.user_metadata.summary], [str])
            found.append(summary)
    return found


async def test_the_model_loads_a_skill_and_calls_the_tool_it_brings(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(
        key,
        [
            fake.tool_calls(("load_skill", {"name": REFUND_POLICY})),
            fake.tool_calls(("load_skill", {"name": "payroll"}), ("refund", {"order": "A17"})),
            fake.text("Refunded A17."),
        ],
    )
    agent = {"skills": [REFUND_POLICY], "tools": ["read_file"]}
    # load_skill never waits for an approval, even where the task asks for one.
    task = {"constraints": {"require_approval": ["load_skill"]}}
    handle = await turns.start(scripted_request(key, agent=agent, task=task))

    report = await handle.result()

    assert report.outcome == "completed"
    assert report.skills_loaded == [REFUND_POLICY]
    results = [m.content for m in report.messages if m.role == "user"][1:]
    assert INSTRUCTIONS in results[0][0].content
    refused, refunded = results[1]
    assert refused.is_error and "Unknown skill 'payroll'" in refused.text()
    assert (refunded.is_error, refunded.text()) == (False, "refunded order A17")
    first = turns.fake.requests_for(key)[0].body
    system = "".join(block["text"] for block in first["system"])
    assert f"- {REFUND_POLICY}: {DESCRIPTION}" in system and INSTRUCTIONS not in system
    names = [tool["name"] for tool in first["tools"]]
    assert names == ["read_file", "refund", "load_skill", "read_skill_file"]
    ran = await summaries(turns.client, handle)
    assert f"load_skill {REFUND_POLICY}" in ran and "tool refund" in ran
    assert not any("payroll" in summary for summary in ran)  # refused: nothing ran
    assert ran[0] == f"describe skills · {REFUND_POLICY}"
    # The Web UI's current details name what the turn loaded.
    metadata = await handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
    assert f"skills loaded: `{REFUND_POLICY}`" in metadata.current_details


async def test_an_always_skill_is_in_the_system_prompt_and_reported_loaded(
    turns: TurnRunner,
) -> None:
    key = new_key()
    turns.fake.script(key, [fake.text("Done.")])
    agent = {"skills": [{"name": REFUND_POLICY, "always": True}]}

    report = await turns.run(scripted_request(key, agent=agent))

    assert report.skills_loaded == [REFUND_POLICY]
    system = "".join(block["text"] for block in turns.fake.requests_for(key)[0].body["system"])
    assert system.endswith(INSTRUCTIONS)


@pytest.mark.parametrize(
    ("agent", "says"),
    [
        ({"skills": ["payroll"]}, "this worker has no skill 'payroll'"),
        (
            {"skills": [REFUND_POLICY], "tools": ["refund"]},
            "brings the tool 'refund', which the agent has already",
        ),
    ],
)
async def test_a_skill_the_worker_cannot_give_fails_the_turn_before_any_model_call(
    turns: TurnRunner, agent: dict[str, object], says: str
) -> None:
    key = new_key()
    turns.fake.script(key, [fake.text("never")])

    error, report = await failure_of(turns, scripted_request(key, agent=agent))

    assert error.type == errors.INVALID_TURN_REQUEST
    assert says in error.message
    assert report.llm_calls == 0 and turns.fake.requests_for(key) == []
