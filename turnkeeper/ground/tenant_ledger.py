"""Talking to a tenant's ledger (`TenantLedgerWorkflow`) from outside a workflow: one
update-with-start, so a tenant's first call or `tenants set` creates its ledger and every later
one finds it. Used by the model-call activity (reserve, settle) and by the client (set caps)."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from typing import Final, TypeVar

from temporalio import activity
from temporalio.client import (
    Client,
    RPCTimeoutOrCancelledError,
    WithStartWorkflowOperation,
    WorkflowUpdateFailedError,
)
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.service import RPCError

from turnkeeper.contracts.tenants import LEDGER_WORKFLOW_TYPE, ledger_id
from turnkeeper.ground.ledger_busy import asking, forget_start_failure, is_busy, pause_s
from turnkeeper.ground.runtime_workflows import check_kept, reaching

T = TypeVar("T")

# The ledger answers in milliseconds when a worker runs it; without one, fail the attempt soon
# (the model-call activity retries) rather than hang until the activity's own timeout.
RPC_TIMEOUT: Final = timedelta(seconds=10)
# A ledger too busy to take the update (a heavy tenant's calls all at once, or the ledger between
# two runs: `ledger_busy.py`) is asked again for this long before the attempt fails.
BUSY_FOR_S: Final = 60.0


async def ledger_update(
    client: Client,
    tenant: str,
    task_queue: str,
    update: str,
    arg: object,
    result_type: type[T],
) -> T:
    """Sends `update` with `arg` to the ledger of `tenant`, starting it on `task_queue` first if
    the tenant has none yet; its answer. Heartbeats while it waits for a busy ledger, when
    called from an activity.

    Raises:
        ApplicationError: RuntimeIdTaken, not retried: a workflow of another type holds the
            ledger's id (`turnkeeper/ground/runtime_workflows.py`).
    """
    # A failure that escapes the busy loop is looked at once: a squatter is named by it.
    async with reaching(client, ledger_id(tenant), LEDGER_WORKFLOW_TYPE):
        deadline = time.monotonic() + BUSY_FOR_S
        attempt = 0
        while True:
            start = WithStartWorkflowOperation(
                LEDGER_WORKFLOW_TYPE,
                {"tenant": tenant},
                id=ledger_id(tenant),
                task_queue=task_queue,
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
                static_summary=f"Spend and caps of tenant {tenant}",
            )
            try:
                async with asking(ledger_id(tenant)):
                    return await client.execute_update_with_start_workflow(
                        update,
                        arg,
                        start_workflow_operation=start,
                        result_type=result_type,
                        rpc_timeout=RPC_TIMEOUT,
                    )
            except RPCError as err:
                forget_start_failure(start)
                if not is_busy(err) or time.monotonic() > deadline:
                    raise
            except WorkflowUpdateFailedError:
                # The ledger itself never fails an update: this one was lost on the way (the
                # server restarted while it was in flight, and the chaos matrix saw a settlement
                # dropped so, under-billing the tenant and holding its reservation for an hour).
                # Asked again, the ledger's current run takes it; a squatter, which refuses
                # every update, is named at once instead.
                forget_start_failure(start)
                await check_kept(client, ledger_id(tenant), LEDGER_WORKFLOW_TYPE)
                if time.monotonic() > deadline:
                    raise
            except RPCTimeoutOrCancelledError:
                # The SDK raises this, not the RPCError, when the call timed out: the start's
                # failure is still set and unread (asyncio would log it as an error).
                forget_start_failure(start)
                raise
            if activity.in_activity():
                activity.heartbeat()
            await asyncio.sleep(pause_s(attempt))
            attempt += 1
