"""`turnkeeper tenants`: every tenant's spend today and this month against its caps; `tenants
set NAME` to change a tenant's caps; `tenants show NAME` for one tenant."""

from __future__ import annotations

import json

from rich.table import Table
from temporalio.exceptions import ApplicationError

from turnkeeper.client.connection import connect
from turnkeeper.client.tenants import TenantError, all_tenants, set_caps, tenant_spend
from turnkeeper.console.commands import Connection
from turnkeeper.console.terminal import CommandError, out
from turnkeeper.contracts.tenants import TenantCaps, TenantSpend


def _cap(value: float | None) -> str:
    return "none" if value is None else f"${value:g}"


def _table(tenants: list[TenantSpend]) -> Table:
    table = Table("tenant", "today (UTC)", "day cap", "this month", "month cap", "in flight")
    for t in tenants:
        table.add_row(
            t.tenant,
            f"${t.spent_day_usd:.4f}",
            _cap(t.caps.usd_per_day),
            f"${t.spent_month_usd:.4f}",
            _cap(t.caps.usd_per_month),
            f"{t.in_flight} (${t.reserved_usd:.4f} reserved)",
        )
    return table


def _print(tenants: list[TenantSpend], as_json: bool) -> None:
    if as_json:
        out.out(json.dumps([t.model_dump(mode="json") for t in tenants]), highlight=False)
    elif not tenants:
        out.print("No tenants yet: none has run a turn or had caps set.")
    else:
        out.print(_table(tenants))


async def list_tenants(connection: Connection, as_json: bool) -> int:
    client = await connect(address=connection.address, namespace=connection.namespace)
    _print(await all_tenants(client), as_json)
    return 0


async def show(connection: Connection, tenant: str, as_json: bool) -> int:
    client = await connect(address=connection.address, namespace=connection.namespace)
    try:
        spend = await tenant_spend(client, tenant)
    except TenantError as error:
        raise CommandError(str(error), exit_code=1) from None
    _print([spend], as_json)
    return 0


async def set_tenant_caps(
    connection: Connection, tenant: str, caps: TenantCaps, task_queue: str, as_json: bool
) -> int:
    client = await connect(address=connection.address, namespace=connection.namespace)
    try:
        spend = await set_caps(client, tenant, caps, task_queue)
    except ApplicationError as error:  # RuntimeIdTaken: it names the squatter to terminate
        raise CommandError(error.message) from None
    _print([spend], as_json)
    return 0
