"""A tenant's spend caps around one model call: before it, the call's maximum cost is reserved
on the tenant's ledger (refused: the call is not made, and the turn fails or waits in
`awaiting_budget`); after it, the reservation is settled with what the call cost. A call of a
turn without a tenant does nothing here: no round trip, no count of tokens."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from temporalio import activity
from temporalio.exceptions import ApplicationError
from turnkeeper.activities.providers.provider import ModelProvider, ModelRequest
from turnkeeper.contracts.activity_io import ModelCallInput
from turnkeeper.contracts.pricing import cache_write_price, price_for
from turnkeeper.contracts.tenants import (
    TENANT_CAP_REACHED,
    UPDATE_RESERVE,
    UPDATE_SETTLE,
    ReserveInput,
    ReserveResult,
    SettleInput,
    TenantSpend,
)

from turnkeeper.ground.logs import get_logger
from turnkeeper.ground.tenant_ledger import ledger_update

log = get_logger(__name__)


@dataclass
class Settlement:
    """What the call cost, set by the caller once the provider answered."""

    cost_usd: float = 0.0


async def max_cost_usd(
    call: ModelCallInput, provider: ModelProvider, request: ModelRequest
) -> float:
    """The most the call can cost: its input (counted by the provider, each token at the dearer
    of the input and cache-write prices) and `max_tokens` of output; 0 for an unpriced model."""
    price = price_for(call.model, call.price)
    if price is None:
        return 0.0
    tokens = await provider.count_input_tokens(request)
    per_input = max(price.input_per_mtok, cache_write_price(price))
    return (tokens * per_input + call.max_tokens * price.output_per_mtok) / 1_000_000


@asynccontextmanager
async def tenant_reservation(
    call: ModelCallInput, provider: ModelProvider, request: ModelRequest
) -> AsyncIterator[Settlement]:
    """Reserves the call's maximum cost on its tenant's ledger for the block, and settles it
    with `Settlement.cost_usd` after (0 when the block raised: the provider billed nothing).

    Raises:
        ApplicationError: TenantCapReached, not retried: the tenant is at a cap; the message
            names the tenant, the cap and the spend.
    """
    settlement = Settlement()
    if call.tenant is None:
        yield settlement
        return
    info = activity.info()
    # Attempts of one call share the key, so a retry replaces its attempt's reservation.
    key = f"{info.workflow_id}/{info.activity_id}"
    amount = await max_cost_usd(call, provider, request)
    reserve = ReserveInput(
        tenant=call.tenant, key=key, amount_usd=amount, turn_workflow_id=info.workflow_id or ""
    )
    answer = await ledger_update(
        activity.client(), call.tenant, info.task_queue, UPDATE_RESERVE, reserve, ReserveResult
    )
    if not answer.granted:
        raise ApplicationError(
            f"{answer.message}; model call {call.iteration} was not made",
            type=TENANT_CAP_REACHED,
            non_retryable=True,
        )
    try:
        yield settlement
    finally:
        await _settle(call.tenant, key, settlement.cost_usd, info.task_queue)


async def _settle(tenant: str, key: str, cost_usd: float, task_queue: str) -> None:
    # A settlement that fails must not fail a call the provider has answered (and billed): a
    # retry would bill it again. Its reservation then lapses (`RESERVATION_TTL`).
    try:
        await ledger_update(
            activity.client(),
            tenant,
            task_queue,
            UPDATE_SETTLE,
            SettleInput(key=key, cost_usd=cost_usd),
            TenantSpend,
        )
    except Exception as err:
        log.warning(
            "tenant_settle_failed", tenant=tenant, key=key, cost_usd=cost_usd, error=str(err)
        )
