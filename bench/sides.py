"""The two sides of every comparison, behind one small interface: start a turn, check its
result, name its model and tool activities."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from temporalio.client import Client, WorkflowHandle

from bench.floor import FLOOR_MODEL_ACTIVITY, FLOOR_TOOL_ACTIVITY, start_floor_turn
from bench.scenario import FLOOR, OURS
from bench.turnkeeper_side import (
    MODEL_ACTIVITY,
    TOOL_ACTIVITY,
    check_report,
    start_turnkeeper_turn,
)

__all__ = ["FLOOR", "OURS", "Side", "floor_side", "in_turns", "turnkeeper_side"]


@dataclass
class Side:
    name: str
    client: Client
    task_queue: str
    model_activity: str
    tool_activity: str
    _start: Callable[[Client, str, int, float], Awaitable[WorkflowHandle[Any, Any]]]
    _check: Callable[[Any, int], None]

    async def start(self, k: int, latency_ms: float) -> WorkflowHandle[Any, Any]:
        return await self._start(self.client, self.task_queue, k, latency_ms)

    async def run_turn(
        self, k: int, latency_ms: float, timeout_s: float
    ) -> tuple[float, WorkflowHandle[Any, Any]]:
        """Runs one turn from start to result; returns its wall time and handle.

        Raises:
            RuntimeError: the turn did not finish in `timeout_s` (it is terminated: a workflow
                task that keeps failing would otherwise retry forever) or did not play the script.
        """
        started = time.perf_counter()
        handle = await self.start(k, latency_ms)
        result = await result_within(handle, timeout_s, f"{self.name}: turn {handle.id} (k={k})")
        wall = time.perf_counter() - started
        self._check(result, k)
        return wall, handle


async def result_within(handle: WorkflowHandle[Any, Any], timeout_s: float, what: str) -> Any:
    """The workflow's result.

    Raises:
        RuntimeError: it did not finish in `timeout_s`; it is terminated (a workflow task that
            keeps failing would otherwise retry forever).
    """
    try:
        return await asyncio.wait_for(handle.result(), timeout_s)
    except TimeoutError:
        await handle.terminate("bench: turn timed out")
        raise RuntimeError(f"{what} did not finish in {timeout_s:g} s") from None


def _check_floor(result: Any, k: int) -> None:
    if result != "done":
        raise RuntimeError(f"floor turn k={k} returned {result!r}")


def floor_side(client: Client, task_queue: str) -> Side:
    return Side(
        FLOOR,
        client,
        task_queue,
        FLOOR_MODEL_ACTIVITY,
        FLOOR_TOOL_ACTIVITY,
        start_floor_turn,
        _check_floor,
    )


def turnkeeper_side(client: Client, task_queue: str) -> Side:
    return Side(
        OURS,
        client,
        task_queue,
        MODEL_ACTIVITY,
        TOOL_ACTIVITY,
        start_turnkeeper_turn,
        check_report,
    )


def in_turns(sides: tuple[Side, Side], rep: int) -> tuple[Side, Side]:
    """Floor first on even reps, ours first on odd ones, so drift hits both alike."""
    return sides if rep % 2 == 0 else (sides[1], sides[0])
