"""Retries of the `tool_call` activity on a real Temporal server: an idempotent tool is run again
with the same idempotency key; a non-idempotent one runs once and the model is told so."""

from __future__ import annotations

import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from pydantic import BaseModel
from temporalio import workflow
from temporalio.client import Client
from temporalio.exceptions import ActivityError
from temporalio.worker import UnsandboxedWorkflowRunner, Worker
from turnkeeper.activities.tools.registry import ToolContext, ToolRegistry, WorkerTool, worker_tool
from turnkeeper.activities.tools.tool_activity import ToolActivities
from turnkeeper.contracts.activity_io import ToolCallInput, ToolCallResult
from turnkeeper.contracts.names import ACTIVITY_TOOL_CALL
from turnkeeper.workflows.tools.retries import (
    interrupted_call_text,
    tool_retry_policy,
)

from turnkeeper.payloads.content_store import LocalFolderStore

RUNS: list[tuple[str, str, int]] = []  # (tool, idempotency key, attempt) of every run


@worker_tool(name="append_ledger", idempotent=False)
def append_ledger(entry: str, context: ToolContext) -> str:
    """Append an entry to a ledger: running it twice writes it twice."""
    RUNS.append(("append_ledger", context.idempotency_key, context.attempt))
    return f"appended {entry}"


@worker_tool(name="set_flag")
def set_flag(flag: str, context: ToolContext) -> str:
    """Set a flag: running it twice is running it once."""
    RUNS.append(("set_flag", context.idempotency_key, context.attempt))
    return f"{flag} set"


class FirstPutFails(LocalFolderStore):
    """Loses the first result, as a worker that dies after the tool ran but before it reported."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.failed = False

    async def put(self, data: bytes) -> str:
        if not self.failed:
            self.failed = True
            raise OSError("the worker died")
        return await super().put(data)


class Probe(BaseModel):
    call: ToolCallInput
    idempotent: bool


@workflow.defn(name="ToolRetryProbe")
class ToolRetryProbe:
    """Dispatches one tool call the way a turn does, and answers what the model would read."""

    @workflow.run
    async def run(self, probe: Probe) -> str:
        try:
            result = await workflow.execute_activity(
                ACTIVITY_TOOL_CALL,
                probe.call,
                result_type=ToolCallResult,
                start_to_close_timeout=timedelta(seconds=30),
                retry_policy=tool_retry_policy(probe.idempotent),
            )
        except ActivityError as err:
            return interrupted_call_text(probe.call.tool, probe.idempotent, str(err.cause))
        return result.content


async def dispatch(client: Client, tmp_path: Path, tool: WorkerTool, call: ToolCallInput) -> str:
    task_queue = f"tq-{uuid.uuid4()}"
    activities = ToolActivities(ToolRegistry([tool]), FirstPutFails(tmp_path / "store"))
    async with Worker(
        client,
        task_queue=task_queue,
        workflows=[ToolRetryProbe],
        activities=[activities.tool_call],
        workflow_runner=UnsandboxedWorkflowRunner(),
    ):
        return await client.execute_workflow(
            ToolRetryProbe.run,
            Probe(call=call, idempotent=tool.idempotent),
            id=f"probe-{uuid.uuid4()}",
            task_queue=task_queue,
        )


@pytest.fixture(autouse=True)
def _no_runs_yet() -> None:
    RUNS.clear()


async def test_a_retried_call_keeps_its_idempotency_key(client: Client, tmp_path: Path) -> None:
    call = ToolCallInput(turn_id="turn-r", call_id="toolu_1", tool="set_flag", input={"flag": "f"})
    assert await dispatch(client, tmp_path, set_flag, call) == "f set"
    assert RUNS == [("set_flag", "turn-r/toolu_1", 1), ("set_flag", "turn-r/toolu_1", 2)]


async def test_a_non_idempotent_call_runs_at_most_once(client: Client, tmp_path: Path) -> None:
    call = ToolCallInput(
        turn_id="turn-n", call_id="toolu_2", tool="append_ledger", input={"entry": "e"}
    )
    text = await dispatch(client, tmp_path, append_ledger, call)
    assert RUNS == [("append_ledger", "turn-n/toolu_2", 1)]
    assert text.startswith("Tool 'append_ledger' did not complete: ")
    assert "the worker died" in text
    assert text.endswith(
        "The tool may or may not have completed; it was not retried because it is not "
        "idempotent. Check its effect before calling it again."
    )
