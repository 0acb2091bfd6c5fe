"""Every golden history must replay on today's workflow code. A failure here means a change is
not replay-safe: put it behind `workflow.patched()` (or a new Worker Deployment Version, issue
11) and record the new behaviour under a new version tag, keeping the old files.

The goldens of `GOLDEN_VERSION` are the complete set: each scenario of `record_histories.py`
(turns and sessions), recorded once in plaintext and once through an encrypted deployment's
converter. All of them replay with encryption on: the plaintext ones pass through the codec,
the `-encrypted` ones decrypt with the golden key."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner
from turnkeeper.workflows.agent_turn_workflow import AgentTurnWorkflow
from turnkeeper.workflows.evals.eval_run_workflow import EvalRunWorkflow
from turnkeeper.workflows.sessions.agent_session_workflow import AgentSessionWorkflow

from tests.support.golden_keys import GOLDEN_STORE, golden_converter
from tests.workflows.record_histories import SCENARIOS
from turnkeeper.worker.wiring import workflow_runner

# The recording made when the pre-release `workflow.patched` branches were removed (issue 15).
GOLDEN_VERSION = "v7"
HISTORIES = sorted((Path(__file__).parents[2] / "histories").glob("*.json"))


def test_every_scenario_has_a_plain_and_an_encrypted_golden() -> None:
    stems = {path.stem for path in HISTORIES}
    for scenario in SCENARIOS:
        # A scenario added after GOLDEN_VERSION has the goldens of the version that added it.
        versions = {
            stem.removeprefix(f"{scenario.__name__}-").removesuffix("-encrypted")
            for stem in stems
            if stem.startswith(f"{scenario.__name__}-v")
        }
        assert any(
            {f"{scenario.__name__}-{v}", f"{scenario.__name__}-{v}-encrypted"} <= stems
            for v in versions
        ), scenario.__name__
    assert any(path.stem.startswith("session_") for path in HISTORIES)


# Temporal's default sandbox, which imports our modules afresh for each run, and the worker's own
# (`workflow_runner`: our modules passed through, payload contexts asked without entering).
RUNNERS = {"sdk-sandbox": SandboxedWorkflowRunner, "worker-sandbox": workflow_runner}


@pytest.mark.parametrize("runner", RUNNERS)
@pytest.mark.parametrize("path", HISTORIES, ids=lambda path: path.stem)
async def test_golden_history_replays(path: Path, runner: str, tmp_path: Path) -> None:
    history = WorkflowHistory.from_json(path.stem, path.read_text())
    store = shutil.copytree(GOLDEN_STORE, tmp_path / "store")
    converter = golden_converter(store)
    # Each history names its workflow type: turns, sessions and evaluation runs replay on their
    # own class.
    replayer = Replayer(
        workflows=[AgentTurnWorkflow, AgentSessionWorkflow, EvalRunWorkflow],
        data_converter=converter,
        workflow_runner=RUNNERS[runner](),
    )

    result = await replayer.replay_workflow(history, raise_on_replay_failure=True)

    assert result.replay_failure is None


PLAINTEXT = [path for path in HISTORIES if not path.stem.endswith("-encrypted")]


@pytest.mark.parametrize("path", PLAINTEXT, ids=lambda path: path.stem)
async def test_a_plaintext_golden_replays_on_a_worker_that_requires_encryption(
    path: Path, tmp_path: Path
) -> None:
    """Switching TURNKEEPER_REQUIRE_ENCRYPTION on while turns that began in plaintext run: their
    payloads are marked on replay, and the turn must still take the path it took (no patch
    marker in these histories, so nothing is refused: workflows/inputs/plaintext.py)."""
    history = WorkflowHistory.from_json(path.stem, path.read_text())
    store = shutil.copytree(GOLDEN_STORE, tmp_path / "store")
    replayer = Replayer(
        workflows=[AgentTurnWorkflow, AgentSessionWorkflow, EvalRunWorkflow],
        data_converter=golden_converter(store, require_encryption=True),
        workflow_runner=workflow_runner(),
    )

    result = await replayer.replay_workflow(history, raise_on_replay_failure=True)

    assert result.replay_failure is None
