"""Cassettes, the replay of real histories and the fork of a turn, on the real dev server: a turn
recorded on the fake Anthropic server replays with no provider reachable; `replay_from_server`
passes a good history and reports a diverging one; a fork at iteration 2 starts from the
conversation as it stood before that call."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio import workflow
from temporalio.client import Client
from temporalio.worker import Worker
from turnkeeper.activities.providers.anthropic_provider import AnthropicProvider
from turnkeeper.activities.providers.cassette_provider import CassetteSettings, with_cassette
from turnkeeper.contracts.turn import AgentReport

from tests.conftest import (
    TurnRunner,
    make_settings,
    new_key,
    providers_for,
    scripted_request,
)
from tests.fakes import fake_anthropic as anthropic
from tests.fakes.fake_anthropic import FakeAnthropic
from turnkeeper.client.fork import ForkChanges, ForkError, fork_turn
from turnkeeper.worker.history_replay import replay_from_server
from turnkeeper.worker.wiring import build_activities, worker_workflows, workflow_runner

CLOSED_PORT_URL = "http://127.0.0.1:9"  # discard: nothing answers there


def three_iterations(fake: FakeAnthropic, workspace: Path) -> dict[str, Any]:
    (workspace / "notes.md").write_text("# Notes\nAlpha beta.\n")
    key = new_key()
    fake.script(
        key,
        [
            anthropic.tool_calls(("list_files", {"path": "."})),
            anthropic.tool_calls(("read_file", {"path": "notes.md"})),
            anthropic.text("The notes say: Alpha beta."),
        ],
    )
    return scripted_request(key, agent={"stream": True})


async def run_with(
    client: Client, tmp_path: Path, providers: dict[str, Any], request: dict[str, Any]
) -> tuple[AgentReport | BaseException, str]:
    """Runs one turn on a worker of its own with `providers`; its report (or failure) and id."""
    settings = make_settings(tmp_path, f"tq-{uuid.uuid4()}")
    workflow_id = f"turn-{uuid.uuid4()}"
    async with Worker(
        client,
        task_queue=settings.task_queue,
        workflows=worker_workflows(),
        workflow_runner=workflow_runner(),
        activities=build_activities(settings, client=client, providers=providers),
    ):
        handle = await client.start_workflow(
            "AgentTurnWorkflow",
            request,
            id=workflow_id,
            task_queue=settings.task_queue,
            result_type=AgentReport,
        )
        try:
            return await handle.result(), workflow_id
        except Exception as failure:
            return failure, workflow_id


async def test_a_recorded_turn_replays_with_no_provider_reachable(
    client: Client, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    path = tmp_path / "turn.cassette"
    request = three_iterations(fake_anthropic, make_settings(tmp_path, "-").workspace)
    recording = with_cassette(providers_for(fake_anthropic), CassetteSettings(path, "record"))
    recorded, _ = await run_with(client, tmp_path, recording, request)
    assert isinstance(recorded, AgentReport) and recorded.llm_calls == 3
    assert "test-key" not in path.read_text()

    dead = {"anthropic": AnthropicProvider(api_key="test-key", base_url=CLOSED_PORT_URL)}
    replaying = with_cassette(dead, CassetteSettings(path, "replay"))
    replayed, _ = await run_with(client, tmp_path, replaying, request)
    assert isinstance(replayed, AgentReport)
    assert replayed.messages == recorded.messages
    assert replayed.usage == recorded.usage

    other = {**request, "task": {**request["task"], "input": "Do another thing."}}
    missed, _ = await run_with(client, tmp_path, replaying, other)
    error = missed.cause  # type: ignore[union-attr]
    assert error.type == "CassetteMiss" and error.non_retryable
    assert str(path) in error.message
    assert 'messages[0].content[0].text: sent "Do another thing."' in error.message


@workflow.defn(name="AgentTurnWorkflow")
class TimerInsteadOfModelCall:
    """A changed workflow: where the turn called its model, this one sleeps."""

    @workflow.run
    async def run(self, request: dict[str, Any]) -> None:
        await workflow.sleep(1)


async def test_replay_passes_a_good_history_and_reports_a_diverging_one(
    turns: TurnRunner, client: Client
) -> None:
    request = three_iterations(turns.fake, turns.workspace)
    handle = await turns.start(request)
    await handle.result()

    good = [o async for o in replay_from_server(client, workflow_ids=[handle.id, "no-such"])]
    assert [(o.workflow_id, o.problem) for o in good] == [
        (handle.id, None),
        ("no-such", "no such workflow"),
    ]
    assert good[0].run_id == handle.result_run_id

    diverged = [
        o
        async for o in replay_from_server(
            client, workflow_ids=[handle.id], workflows=[TimerInsteadOfModelCall]
        )
    ]
    assert len(diverged) == 1 and diverged[0].problem is not None
    assert "Nondeterminism error" in diverged[0].problem
    assert "HistoryEvent(id: " in diverged[0].problem  # where it parts from the history


async def test_a_fork_at_iteration_2_starts_from_the_conversation_before_it(
    turns: TurnRunner, client: Client
) -> None:
    request = three_iterations(turns.fake, turns.workspace)
    handle = await turns.start(request)
    original = await handle.result()

    fork_id = await fork_turn(
        client, handle.id, 2, ForkChanges(system_prompt=request["agent"]["system_prompt"] + " !")
    )
    assert fork_id == f"{handle.id}-fork-2"  # a turn id of its own, never a nested one
    forked = await client.get_workflow_handle(fork_id, result_type=AgentReport).result()

    before = original.messages[:2]  # the task, the first answer; then its tool results
    assert forked.messages[:2] == before
    results = forked.messages[2]
    assert results.content[: len(original.messages[2].content)] == original.messages[2].content
    assert forked.messages[-1] == original.messages[-1]  # the scripted steps 2 and 3 again
    assert forked.llm_calls == 2

    with pytest.raises(ForkError, match="has 3 iteration\\(s\\) with a model answer"):
        await fork_turn(client, handle.id, 5, ForkChanges())
    with pytest.raises(ForkError, match="no turn with workflow id 'no-such-turn'"):
        await fork_turn(client, "no-such-turn", 2, ForkChanges())
    with pytest.raises(ForkError, match=r"forked request does not validate: agent\.model"):
        await fork_turn(client, handle.id, 2, ForkChanges(model="no-provider-prefix"))
