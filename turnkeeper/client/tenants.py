"""Tenants from a client: set a tenant's spend caps, read one tenant's spend, list them all.
Each tenant's spend lives in its ledger workflow (`turnkeeper-tenant/<name>`), which the worker
runs; setting caps creates the ledger of a tenant that has none yet."""

from __future__ import annotations

from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from turnkeeper.contracts.tenants import (
    LEDGER_ID_PREFIX,
    LEDGER_WORKFLOW_TYPE,
    QUERY_SPEND,
    UPDATE_SET_CAPS,
    SetCapsInput,
    TenantCaps,
    TenantSpend,
    ledger_id,
    tenant_problem,
)
from turnkeeper.ground.tenant_ledger import ledger_update


class TenantError(ValueError):
    """A tenant name that is not a name, or a tenant with no ledger; the message says which."""


def checked_tenant(name: str) -> str:
    problem = tenant_problem(name)
    if problem:
        raise TenantError(problem)
    return name


async def set_caps(client: Client, tenant: str, caps: TenantCaps, task_queue: str) -> TenantSpend:
    """Replaces the tenant's caps (creating its ledger on `task_queue` if it has none); its
    spend as the ledger answers. Turns waiting for the tenant's caps call again."""
    update = SetCapsInput(tenant=checked_tenant(tenant), caps=caps)
    return await ledger_update(client, tenant, task_queue, UPDATE_SET_CAPS, update, TenantSpend)


async def tenant_spend(client: Client, tenant: str) -> TenantSpend:
    """The tenant's spend and caps.

    Raises:
        TenantError: no such tenant (no turn of it has run, and no caps were set).
    """
    handle = client.get_workflow_handle(ledger_id(checked_tenant(tenant)))
    try:
        return await handle.query(QUERY_SPEND, result_type=TenantSpend)
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            raise TenantError(
                f"no tenant {tenant!r}: no turn of it has run and no caps were set "
                "(set some with `turnkeeper tenants set`)"
            ) from None
        raise


async def all_tenants(client: Client) -> list[TenantSpend]:
    """Every tenant with a running ledger, by name."""
    query = f"WorkflowType = '{LEDGER_WORKFLOW_TYPE}' AND ExecutionStatus = 'Running'"
    names = sorted(
        {
            execution.id.removeprefix(LEDGER_ID_PREFIX)
            async for execution in client.list_workflows(query)
            if execution.id.startswith(LEDGER_ID_PREFIX)
        }
    )
    return [await tenant_spend(client, name) for name in names]
