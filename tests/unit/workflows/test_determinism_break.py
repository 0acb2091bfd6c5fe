"""A change that breaks determinism is caught by replaying the golden histories, before it lands.

The changed workflow below adds one command (a timer) at the start of every turn. Deployed over
turns already running, their next workflow task would fail with a nondeterminism error and
retry forever (the README's runbook says how to recover them). The replay test catches it first:
here the Replayer must fail on a recorded history, and the same change behind
`workflow.patched` must replay."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio import workflow
from temporalio.client import WorkflowHistory
from temporalio.common import RawValue
from temporalio.worker import Replayer, UnsandboxedWorkflowRunner
from temporalio.workflow import NondeterminismError
from turnkeeper.contracts.names import WORKFLOW_TYPE
from turnkeeper.contracts.turn import AgentReport
from turnkeeper.workflows.agent_turn_workflow import AgentTurnWorkflow

from tests.support.golden_keys import golden_converter

GOLDEN = Path(__file__).parents[2] / "histories" / "approval_and_external-v7.json"


@workflow.defn(name=WORKFLOW_TYPE)
class CarelessChange(AgentTurnWorkflow):
    @workflow.run
    async def run(self, request: RawValue, carried: Any = None) -> AgentReport:
        await workflow.sleep(timedelta(seconds=1))  # a new command, not behind a patch
        return await super().run(request, carried)


@workflow.defn(name=WORKFLOW_TYPE)
class PatchedChange(AgentTurnWorkflow):
    @workflow.run
    async def run(self, request: RawValue, carried: Any = None) -> AgentReport:
        if workflow.patched("settle-first"):
            await workflow.sleep(timedelta(seconds=1))
        return await super().run(request, carried)


async def _replay(workflow_class: type) -> Exception | None:
    history = WorkflowHistory.from_json(GOLDEN.stem, GOLDEN.read_text())
    # Unsandboxed: the sandbox would re-import this test module; replay checks commands the same.
    replayer = Replayer(
        workflows=[workflow_class],
        data_converter=golden_converter(),
        workflow_runner=UnsandboxedWorkflowRunner(),
    )
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    return result.replay_failure


async def test_an_unpatched_change_fails_the_replay_of_a_recorded_turn() -> None:
    failure = await _replay(CarelessChange)

    assert isinstance(failure, NondeterminismError), failure


async def test_the_same_change_behind_workflow_patched_replays() -> None:
    assert await _replay(PatchedChange) is None
