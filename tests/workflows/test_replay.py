"""Every golden history recorded by an earlier version must replay on today's workflow code.
A failure here means a change is not replay-safe: put it behind `workflow.patched()`.

All of them replay with encryption on: the plaintext ones (recorded before it existed, or
without keys) pass through the codec, the `-encrypted` ones decrypt with the golden key."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer
from turnkeeper.workflows.agent_session_workflow import AgentSessionWorkflow
from turnkeeper.workflows.agent_turn_workflow import AgentTurnWorkflow

from tests.workflows.golden_keys import GOLDEN_STORE, golden_converter

HISTORIES = sorted((Path(__file__).parent.parent / "histories").glob("*.json"))


def test_there_are_golden_histories() -> None:
    assert len(HISTORIES) >= 2
    assert any(path.stem.endswith("-encrypted") for path in HISTORIES)
    assert any(path.stem.startswith("session_") for path in HISTORIES)


@pytest.mark.parametrize("path", HISTORIES, ids=lambda path: path.stem)
async def test_golden_history_replays(path: Path, tmp_path: Path) -> None:
    history = WorkflowHistory.from_json(path.stem, path.read_text())
    store = shutil.copytree(GOLDEN_STORE, tmp_path / "store")
    converter = golden_converter(store)
    # Each history names its workflow type: turns and sessions replay on their own class.
    replayer = Replayer(
        workflows=[AgentTurnWorkflow, AgentSessionWorkflow], data_converter=converter
    )

    result = await replayer.replay_workflow(history, raise_on_replay_failure=True)

    assert result.replay_failure is None
