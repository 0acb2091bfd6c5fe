"""Tool-call validation runs inside the workflow sandbox and replays (the checks themselves are
unit-tested in tests/unit/contracts/test_tool_validation.py)."""

from __future__ import annotations

import uuid
from typing import Any

from temporalio import workflow
from temporalio.client import Client
from temporalio.worker import Replayer, Worker

from tests.unit.contracts.test_tool_validation import SCHEMA


@workflow.defn(name="ValidationProbe")
class ValidationProbe:
    """Validates from workflow code, as the turn does, inside the sandbox."""

    @workflow.run
    async def run(self, arguments: dict[str, Any]) -> list[str]:
        with workflow.unsafe.imports_passed_through():
            from turnkeeper.contracts.tool_validation import validation_problems
        return validation_problems(SCHEMA, arguments)


async def test_validation_runs_in_the_workflow_sandbox_and_replays(client: Client) -> None:
    task_queue = f"tq-{uuid.uuid4()}"
    async with Worker(client, task_queue=task_queue, workflows=[ValidationProbe]):
        handle = await client.start_workflow(
            ValidationProbe.run, {"path": 1}, id=f"probe-{uuid.uuid4()}", task_queue=task_queue
        )
        assert await handle.result() == ["argument 'path': 1 is not of type 'string'"]
    history = await handle.fetch_history()
    await Replayer(
        workflows=[ValidationProbe], data_converter=client.data_converter
    ).replay_workflow(history)
