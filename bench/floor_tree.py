"""The floor of a lead agent with sub-agents: bare Temporal, a parent workflow and N child
workflows, nothing but what the shape needs.

`FloorLeadWorkflow` makes one model call (sleeps L, answers "tool": fan out), starts N
`FloorSubagentWorkflow` children at once with ids `<parent id>/worker-<i>` (the ids our
sub-agents get), waits for all, then makes the answering model call. Each child runs the floor's
turn loop (`bench.floor`: K × model call → tool call returning 2 KiB, then the answering call) and
returns an output of C characters, the one thing of a child its parent's history must hold.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Final

from temporalio import workflow
from temporalio.client import Client, WorkflowHandle
from temporalio.worker import Worker

from bench.floor import (
    FloorModelInput,
    FloorParkedWorkflow,
    FloorTurnWorkflow,
    floor_model,
    floor_tool,
    iterate_turn,
)

with workflow.unsafe.imports_passed_through():
    from bench.scenario import BLOB

FLOOR_LEAD_WORKFLOW: Final = "FloorLeadWorkflow"
FLOOR_SUBAGENT_WORKFLOW: Final = "FloorSubagentWorkflow"
SUBAGENT_NAME: Final = "worker"

_ACTIVITY_TIMEOUT = timedelta(seconds=60)


@dataclass
class FloorChildInput:
    k: int
    latency_ms: float
    output_chars: int


@dataclass
class FloorTreeInput:
    n: int
    k: int
    latency_ms: float
    output_chars: int


def child_output(chars: int) -> str:
    """A child's answer of `chars` characters: the blob, repeated (not trivially compressible)."""
    return (BLOB * (chars // len(BLOB) + 1))[:chars]


@workflow.defn(name=FLOOR_SUBAGENT_WORKFLOW)
class FloorSubagentWorkflow:
    @workflow.run
    async def run(self, child: FloorChildInput) -> str:
        await iterate_turn(child.k, child.latency_ms)
        return child_output(child.output_chars)


@workflow.defn(name=FLOOR_LEAD_WORKFLOW)
class FloorLeadWorkflow:
    @workflow.run
    async def run(self, tree: FloorTreeInput) -> str:
        await self._model(0, tree.latency_ms)  # answers "tool": the fan-out
        parent = workflow.info().workflow_id
        child = FloorChildInput(tree.k, tree.latency_ms, tree.output_chars)
        outputs = await asyncio.gather(
            *(
                workflow.execute_child_workflow(
                    FloorSubagentWorkflow.run, child, id=f"{parent}/{SUBAGENT_NAME}-{i + 1}"
                )
                for i in range(tree.n)
            )
        )
        await self._model(1, tree.latency_ms)  # answers "done"
        return "done" if all(len(out) == tree.output_chars for out in outputs) else "short"

    @staticmethod
    async def _model(iteration: int, latency_ms: float) -> str:
        return await workflow.execute_activity(
            floor_model,
            FloorModelInput(iteration=iteration, k=1, latency_ms=latency_ms),
            start_to_close_timeout=_ACTIVITY_TIMEOUT,
        )


def floor_tree_worker(client: Client, task_queue: str, **options: Any) -> Worker:
    """A worker for the floor's tree and its one-turn workflows, Temporal's default settings."""
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[
            FloorLeadWorkflow,
            FloorSubagentWorkflow,
            FloorTurnWorkflow,
            FloorParkedWorkflow,
        ],
        activities=[floor_model, floor_tool],
        **options,
    )


async def start_floor_tree(
    client: Client, task_queue: str, n: int, k: int, latency_ms: float, output_chars: int
) -> WorkflowHandle[Any, str]:
    return await client.start_workflow(
        FloorLeadWorkflow.run,
        FloorTreeInput(n=n, k=k, latency_ms=latency_ms, output_chars=output_chars),
        id=f"floor-lead-n{n}-{uuid.uuid4().hex[:10]}",
        task_queue=task_queue,
    )
