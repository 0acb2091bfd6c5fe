"""Client-side operations on an agent's standing approvals, for the console command: list them
and revoke one. Both work with nothing but the contract's names, like the `temporal` CLI."""

from __future__ import annotations

from datetime import timedelta
from typing import Final

from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from turnkeeper.contracts.approvals import (
    QUERY_STANDING,
    SIGNAL_REVOKE,
    RevokeInput,
    StandingApproval,
    approval_cache_id,
)

# A query is answered by a worker; without one it would block until the server gives up.
QUERY_TIMEOUT: Final = timedelta(seconds=10)


async def list_standing(client: Client, agent_id: str) -> list[StandingApproval]:
    """The standing approvals of `agent_id`, by tool; none when it has no approval cache."""
    handle = client.get_workflow_handle(approval_cache_id(agent_id))
    try:
        return await handle.query(
            QUERY_STANDING, result_type=list[StandingApproval], rpc_timeout=QUERY_TIMEOUT
        )
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            return []
        raise


async def revoke(client: Client, agent_id: str, tool: str, by: str = "") -> bool:
    """Revokes the standing approval of `tool` for `agent_id`; later calls ask a human again.

    Returns:
        Whether `tool` had a standing approval (False: nothing to revoke, nothing sent).
    """
    standing = await list_standing(client, agent_id)
    if all(approval.tool != tool for approval in standing):
        return False
    handle = client.get_workflow_handle(approval_cache_id(agent_id))
    await handle.signal(SIGNAL_REVOKE, RevokeInput(tool=tool, by=by), rpc_timeout=QUERY_TIMEOUT)
    return True
