"""Talking to a tenant's ledger (`TenantLedgerWorkflow`) from outside a workflow: one
update-with-start, so a tenant's first call or `tenants set` creates its ledger and every later
one finds it. Used by the model-call activity (reserve, settle) and by the client (set caps)."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Final, TypeVar

from temporalio.client import Client, WithStartWorkflowOperation
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.service import RPCError, RPCStatusCode
from turnkeeper.contracts.tenants import LEDGER_WORKFLOW_TYPE, ledger_id

T = TypeVar("T")

# The ledger answers in milliseconds when a worker runs it; without one, fail the attempt soon
# (the model-call activity retries) rather than hang until the activity's own timeout.
RPC_TIMEOUT: Final = timedelta(seconds=10)
# FAILED_PRECONDITION: the ledger is between two runs (continue-as-new); the next run is there
# within milliseconds (as for the approval cache, `activities/approval_cache.py`).
_NOT_READY_PAUSES: Final = (0.05, 0.1, 0.2, 0.4)


async def ledger_update(
    client: Client,
    tenant: str,
    task_queue: str,
    update: str,
    arg: object,
    result_type: type[T],
) -> T:
    """Sends `update` with `arg` to the ledger of `tenant`, starting it on `task_queue` first if
    the tenant has none yet; its answer."""
    for pause in (*_NOT_READY_PAUSES, None):
        start = WithStartWorkflowOperation(
            LEDGER_WORKFLOW_TYPE,
            {"tenant": tenant},
            id=ledger_id(tenant),
            task_queue=task_queue,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            static_summary=f"Spend and caps of tenant {tenant}",
        )
        try:
            return await client.execute_update_with_start_workflow(
                update,
                arg,
                start_workflow_operation=start,
                result_type=result_type,
                rpc_timeout=RPC_TIMEOUT,
            )
        except RPCError as err:
            if err.status != RPCStatusCode.FAILED_PRECONDITION or pause is None:
                raise
            await asyncio.sleep(pause)
    raise AssertionError("unreachable: the last pass re-raises")
