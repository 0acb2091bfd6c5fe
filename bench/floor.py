"""The floor: bare Temporal, the same turn shape, nothing but what the shape needs.

`FloorTurnWorkflow` runs K iterations of a model activity (sleeps L, answers "tool" or "done")
and a tool activity (returns the 2 KiB blob), then the answering model call. Every activity input
is a few integers: nothing carries a conversation, no search attributes, no heartbeats. Its
history and costs are the lower bound for any Temporal agent loop of this shape.

`FloorParkedWorkflow` waits for a signal and nothing else: the RSS floor of a parked turn; with
K > 0 it first runs K iterations of the loop above at L = 0 (the floor of a turn parked with a
transcript of K iterations: the floor keeps no transcript).

`FloorApprovalWorkflow` parks as a turn waiting on an approval does, with nothing else: one model
call (which asks for a tool), then a wait for the signal bounded by a timeout (a timer), the two
commands a turn's approval wait cannot do without.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Final

from temporalio import activity, workflow
from temporalio.client import Client, WorkflowHandle
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():
    from bench.scenario import BLOB

FLOOR_MODEL_ACTIVITY: Final = "floor_model"
FLOOR_TOOL_ACTIVITY: Final = "floor_tool"
FLOOR_TURN_WORKFLOW: Final = "FloorTurnWorkflow"
FLOOR_PARKED_WORKFLOW: Final = "FloorParkedWorkflow"
FLOOR_APPROVAL_WORKFLOW: Final = "FloorApprovalWorkflow"
RELEASE_SIGNAL: Final = "release"
PARKED_QUERY: Final = "parked"

_ACTIVITY_TIMEOUT = timedelta(seconds=60)
_APPROVAL_TIMEOUT = timedelta(hours=24)  # a turn's default approval_timeout_s


@dataclass
class FloorTurnInput:
    k: int
    latency_ms: float


@dataclass
class FloorModelInput:
    iteration: int
    k: int
    latency_ms: float


@activity.defn(name=FLOOR_MODEL_ACTIVITY)
async def floor_model(step: FloorModelInput) -> str:
    """Sleeps L like a model would, then asks for the tool until K results were returned."""
    if step.latency_ms > 0:
        await asyncio.sleep(step.latency_ms / 1000.0)
    return "tool" if step.iteration < step.k else "done"


@activity.defn(name=FLOOR_TOOL_ACTIVITY)
async def floor_tool(iteration: int) -> str:
    return BLOB


async def iterate_turn(k: int, latency_ms: float) -> None:
    """K iterations of model call -> tool call, then the answering model call."""
    for iteration in range(k + 1):
        answer = await workflow.execute_activity(
            floor_model,
            FloorModelInput(iteration=iteration, k=k, latency_ms=latency_ms),
            start_to_close_timeout=_ACTIVITY_TIMEOUT,
        )
        if answer == "done":
            return
        await workflow.execute_activity(
            floor_tool, iteration, start_to_close_timeout=_ACTIVITY_TIMEOUT
        )


@workflow.defn(name=FLOOR_TURN_WORKFLOW)
class FloorTurnWorkflow:
    @workflow.run
    async def run(self, turn: FloorTurnInput) -> str:
        await iterate_turn(turn.k, turn.latency_ms)
        return "done"


class _Parking:
    """What both parked floors share: a signal releases them, a query says they wait."""

    def __init__(self) -> None:
        self._released = False
        self._waiting = False

    @workflow.signal(name=RELEASE_SIGNAL)
    def release(self) -> None:
        self._released = True

    @workflow.query(name=PARKED_QUERY)
    def parked(self) -> bool:
        return self._waiting and not self._released


@workflow.defn(name=FLOOR_PARKED_WORKFLOW)
class FloorParkedWorkflow(_Parking):
    @workflow.run
    async def run(self, k: int = 0) -> str:
        if k:
            await iterate_turn(k, 0)
        self._waiting = True
        await workflow.wait_condition(lambda: self._released)
        return "released"


@workflow.defn(name=FLOOR_APPROVAL_WORKFLOW)
class FloorApprovalWorkflow(_Parking):
    @workflow.run
    async def run(self) -> str:
        await workflow.execute_activity(
            floor_model,
            FloorModelInput(iteration=0, k=1, latency_ms=0),
            start_to_close_timeout=_ACTIVITY_TIMEOUT,
        )
        self._waiting = True
        try:
            await workflow.wait_condition(lambda: self._released, timeout=_APPROVAL_TIMEOUT)
        except TimeoutError:
            return "timed out"
        return "released"


def floor_worker(client: Client, task_queue: str, **options: Any) -> Worker:
    """A worker for both floor workflows with default settings unless `options` says otherwise."""
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[FloorTurnWorkflow, FloorParkedWorkflow, FloorApprovalWorkflow],
        activities=[floor_model, floor_tool],
        **options,
    )


async def start_floor_turn(
    client: Client, task_queue: str, k: int, latency_ms: float
) -> WorkflowHandle[Any, str]:
    return await client.start_workflow(
        FloorTurnWorkflow.run,
        FloorTurnInput(k=k, latency_ms=latency_ms),
        id=f"floor-k{k}-{uuid.uuid4().hex[:10]}",
        task_queue=task_queue,
    )


async def start_floor_parked(
    client: Client, task_queue: str, k: int = 0
) -> WorkflowHandle[Any, str]:
    """Starts a floor workflow that parks (after K iterations when `k`)."""
    if k:
        return await client.start_workflow(
            FloorParkedWorkflow.run,
            k,
            id=f"floor-parked-k{k}-{uuid.uuid4().hex[:10]}",
            task_queue=task_queue,
        )
    return await client.start_workflow(
        FloorParkedWorkflow.run, id=f"floor-parked-{uuid.uuid4().hex[:10]}", task_queue=task_queue
    )


async def start_floor_approval(client: Client, task_queue: str) -> WorkflowHandle[Any, str]:
    """Starts a floor workflow that parks as a turn waiting on an approval does."""
    return await client.start_workflow(
        FloorApprovalWorkflow.run,
        id=f"floor-approval-{uuid.uuid4().hex[:10]}",
        task_queue=task_queue,
    )
