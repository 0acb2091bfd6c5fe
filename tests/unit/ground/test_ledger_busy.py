"""A ledger too busy for an update is asked again, never failed on
(`turnkeeper/ground/ledger_busy.py`), and one process keeps its asks of one ledger under the
server's limit."""

from __future__ import annotations

import asyncio

import pytest
from temporalio.client import WithStartWorkflowOperation
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.service import RPCError, RPCStatusCode

from turnkeeper.ground.ledger_busy import (
    IN_FLIGHT_PER_PROCESS,
    LONGEST_PAUSE_S,
    asking,
    forget_start_failure,
    is_busy,
    pause_s,
)


@pytest.mark.parametrize(
    ("status", "message", "busy"),
    [
        (RPCStatusCode.RESOURCE_EXHAUSTED, "limit on number of concurrent in-flight updates", True),
        (RPCStatusCode.UNKNOWN, "workflow update was aborted", True),
        (RPCStatusCode.ABORTED, "aborted", True),
        (RPCStatusCode.FAILED_PRECONDITION, "workflow is closing", True),
        (RPCStatusCode.INVALID_ARGUMENT, "bad input", False),
        (RPCStatusCode.PERMISSION_DENIED, "no", False),
    ],
)
def test_what_counts_as_busy(status: RPCStatusCode, message: str, busy: bool) -> None:
    assert is_busy(RPCError(message, status, b"")) is busy


def test_pauses_grow_and_stay_short() -> None:
    assert all(0.025 <= pause_s(0) <= 0.075 for _ in range(50))
    assert all(pause_s(20) <= LONGEST_PAUSE_S * 1.5 for _ in range(50))


async def test_one_process_keeps_its_asks_of_a_ledger_under_the_limit() -> None:
    inside = most = 0

    async def ask() -> None:
        nonlocal inside, most
        async with asking("turnkeeper-tenant/heavy"):
            inside += 1
            most = max(most, inside)
            await asyncio.sleep(0.01)
            inside -= 1

    await asyncio.gather(*(ask() for _ in range(40)))
    assert most == IN_FLIGHT_PER_PROCESS


async def test_a_refused_start_s_failure_is_read() -> None:
    start: WithStartWorkflowOperation = WithStartWorkflowOperation(
        "Ledger", id="l", task_queue="q", id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING
    )
    forget_start_failure(start)  # never tried: nothing to read, and no wait
    start._workflow_handle.set_exception(RPCError("busy", RPCStatusCode.RESOURCE_EXHAUSTED, b""))
    forget_start_failure(start)
    assert start._workflow_handle._log_traceback is False  # type: ignore[attr-defined]
