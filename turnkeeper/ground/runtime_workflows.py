"""Whether a workflow id the runtime keeps for one of its own workflows (an agent's standing
approvals, a tenant's ledger, a model's rate-limit ledger) holds that workflow.

Those ids are refused as turn ids now (`contracts/turn_ids.py`), but a workflow started at one
before that, or by hand with the raw `temporal` CLI, still answers there: an update finds no
handler, a signal goes nowhere, an update-with-start joins it. The activities that talk to these
workflows ask here only once a call has failed (the fast path costs no round trip more), and a
squatter becomes one non-retryable `RuntimeIdTaken` that names it, instead of a retry loop or an
error that says nothing of the cause.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Final

from temporalio.client import (
    Client,
    RPCTimeoutOrCancelledError,
    WorkflowExecutionStatus,
    WorkflowUpdateFailedError,
)
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from turnkeeper.contracts.errors import RUNTIME_ID_TAKEN

RPC_TIMEOUT: Final = timedelta(seconds=10)

# What a call to one of the runtime's own workflows fails with when something else answers there.
CALL_FAILURES: Final = (RPCError, WorkflowUpdateFailedError, RPCTimeoutOrCancelledError)


def taken(workflow_id: str, found: str, expected: str) -> ApplicationError:
    """The failure that names a squatter at `workflow_id`."""
    return ApplicationError(
        f"workflow {workflow_id} is a {found}, not the {expected} the runtime keeps there; "
        f"terminate it (temporal workflow terminate --workflow-id {workflow_id})",
        type=RUNTIME_ID_TAKEN,
        non_retryable=True,
    )


async def check_kept(client: Client, workflow_id: str, expected: str) -> None:
    """Returns when nothing runs at `workflow_id` or an `expected` workflow does.

    Raises:
        ApplicationError: RuntimeIdTaken, not retried: a running workflow of another type holds
            the id.
    """
    try:
        description = await client.get_workflow_handle(workflow_id).describe(
            rpc_timeout=RPC_TIMEOUT
        )
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            return
        raise
    # A closed workflow of another type is no obstacle: the next start takes the id over.
    if description.status != WorkflowExecutionStatus.RUNNING:
        return
    if description.workflow_type != expected:
        raise taken(workflow_id, description.workflow_type, expected)


@asynccontextmanager
async def reaching(client: Client, workflow_id: str, expected: str) -> AsyncIterator[None]:
    """Around a call to the runtime's own workflow at `workflow_id`: when the call fails, a
    squatter there fails it as `RuntimeIdTaken` instead; any other failure goes on as it was."""
    try:
        yield
    except CALL_FAILURES:
        await check_kept(client, workflow_id, expected)
        raise
