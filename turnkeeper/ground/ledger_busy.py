"""When a ledger workflow (a rate-limit key's, a tenant's) is too busy to take an update now, so
that its caller pauses and asks again instead of failing its model call's attempt.

Many model calls of one hot key or one heavy tenant ask one workflow at once; the server admits
only a few updates in flight per workflow (10 by default) and refuses the rest with
RESOURCE_EXHAUSTED, and an update that arrives while the ledger continues as new is aborted
(ABORTED, "workflow update was aborted") or finds no running workflow for a moment
(FAILED_PRECONDITION, NOT_FOUND). None of them took the update, so asking again is safe.

A worker also keeps its own asks of one ledger under the server's limit (`asking`): a hundred
model calls of one tenant refused and asking again every few tens of milliseconds loaded the
server so much that the ledger took one update a second (measured with `bench.fleet`).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Final

from temporalio import activity
from temporalio.client import WithStartWorkflowOperation
from temporalio.service import RPCError, RPCStatusCode

BUSY: Final = frozenset(
    {
        RPCStatusCode.RESOURCE_EXHAUSTED,
        RPCStatusCode.UNAVAILABLE,
        RPCStatusCode.FAILED_PRECONDITION,
        RPCStatusCode.NOT_FOUND,
        RPCStatusCode.ABORTED,
    }
)
# The pause before asking again: short, doubling, jittered so that the refused callers do not
# come back together.
FIRST_PAUSE_S: Final = 0.05
LONGEST_PAUSE_S: Final = 1.0


def is_busy(err: RPCError) -> bool:
    """Whether the ledger refused the update without taking it (ask again after a pause)."""
    return err.status in BUSY or "update was aborted" in str(err)


def pause_s(attempt: int) -> float:
    """The jittered pause before the `attempt`-th new ask (0 first)."""
    return min(LONGEST_PAUSE_S, FIRST_PAUSE_S * 2**attempt) * (0.5 + random.random())


# Asks of one ledger this process has in flight at most: under the server's 10 per workflow, so
# that one busy worker alone is never refused, and another worker still gets in.
IN_FLIGHT_PER_PROCESS: Final = 6
HEARTBEAT_EVERY_S: Final = 5.0
_slots: dict[tuple[int, str], asyncio.Semaphore] = {}


@asynccontextmanager
async def asking(workflow_id: str) -> AsyncIterator[None]:
    """Holds one of this process's `IN_FLIGHT_PER_PROCESS` asks of the ledger `workflow_id`."""
    # Keyed by event loop too: a semaphore belongs to the loop that first waits on it.
    key = (id(asyncio.get_running_loop()), workflow_id)
    slot = _slots.setdefault(key, asyncio.Semaphore(IN_FLIGHT_PER_PROCESS))
    # Waiting for a slot can outlast the model call's heartbeat timeout: heartbeat meanwhile.
    while True:
        try:
            await asyncio.wait_for(slot.acquire(), HEARTBEAT_EVERY_S)
            break
        except TimeoutError:
            if activity.in_activity():
                activity.heartbeat()
    try:
        yield
    finally:
        slot.release()


def forget_start_failure(start: WithStartWorkflowOperation[Any, Any]) -> None:
    """Reads the failure the SDK set on a refused update-with-start's start operation: nobody
    else reads it, and asyncio logs every unread one at error level ("Future exception was never
    retrieved"). The SDK offers only the awaitable `workflow_handle()`, which would wait forever
    when the start was never tried, so the done future is read directly."""
    future = getattr(start, "_workflow_handle", None)
    if isinstance(future, asyncio.Future) and future.done() and not future.cancelled():
        future.exception()
