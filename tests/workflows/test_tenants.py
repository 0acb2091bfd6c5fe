"""Tenants on a real server: a tenant over its daily cap fails its turn before the provider
hears of it, a pausing turn waits in `awaiting_budget` until `tenants set` raises the cap,
concurrent turns never overshoot a cap by more than their calls in flight, and `TenantId` is
set."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from temporalio.client import Client, WorkflowFailureError, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from turnkeeper.contracts.errors import TURN_BUDGET_EXCEEDED
from turnkeeper.contracts.names import QUERY_STATUS
from turnkeeper.contracts.search_attributes import TENANT_ID
from turnkeeper.contracts.signals import TurnStatus
from turnkeeper.contracts.tenants import UPDATE_SETTLE, TenantCaps

from tests.conftest import TurnRunner, failure_of_turn, new_key, scripted_request
from tests.fakes import fake_anthropic as fake
from tests.support.waiting import until
from turnkeeper.client.tenants import set_caps, tenant_spend

PRICE = {"input_per_mtok": 1_000.0, "output_per_mtok": 10_000.0}  # $0.001 / $0.01 a token
USAGE = {"input_tokens": 10, "output_tokens": 5}  # $0.06 a call at PRICE


def tenant_request(key: str, tenant: str, **constraints: Any) -> dict[str, Any]:
    return scripted_request(
        key,
        agent={"price": PRICE, "max_tokens": 10},
        task={"constraints": constraints},
        tenant=tenant,
    )


async def test_a_tenant_over_its_daily_cap_fails_before_the_provider_is_called(
    turns: TurnRunner,
) -> None:
    key, tenant = new_key(), f"acme-{new_key()}"
    turns.fake.script(key, [fake.text("Done.", usage=USAGE)])
    await set_caps(turns.client, tenant, TenantCaps(usd_per_day=0), turns.task_queue)
    handle = await turns.start(tenant_request(key, tenant))
    error, report = await failure_of_turn(handle)
    assert error.type == TURN_BUDGET_EXCEEDED
    assert f"tenant {tenant!r}" in error.message and "daily cap" in error.message
    assert "of $0: $0.000000 spent" in error.message  # the cap, and the spend beside it
    assert turns.fake.requests_for(key) == []
    assert report.tenant == tenant and report.llm_calls == 0
    described = await handle.describe()
    assert described.typed_search_attributes.get(TENANT_ID) == tenant


async def test_a_pausing_turn_waits_for_its_tenant_cap_and_goes_on_when_it_is_raised(
    turns: TurnRunner,
) -> None:
    key, tenant = new_key(), f"paused-{new_key()}"
    turns.fake.script(key, [fake.text("Done.", usage=USAGE)])
    await set_caps(turns.client, tenant, TenantCaps(usd_per_day=0.01), turns.task_queue)
    handle = await turns.start(tenant_request(key, tenant, on_budget_exhausted="pause"))
    status = await until(
        lambda: handle.query(QUERY_STATUS, result_type=TurnStatus),
        lambda s: s.state == "awaiting_budget",
        "the turn waits for its tenant's cap",
    )
    assert status.budget_request is not None and tenant in status.budget_request.message
    assert turns.fake.requests_for(key) == []
    await set_caps(turns.client, tenant, TenantCaps(usd_per_day=5), turns.task_queue)
    report = await handle.result()
    assert report.outcome == "completed" and report.tenant == tenant
    spend = await tenant_spend(turns.client, tenant)
    assert abs(spend.spent_day_usd - 0.06) < 1e-9 and spend.in_flight == 0


async def test_concurrent_turns_never_overshoot_their_tenant_cap(turns: TurnRunner) -> None:
    """Each call's maximum (input counted, 10 output tokens) is about $0.1+; a $0.25 cap lets
    two calls be in flight at once, never a third, and what they spend stays under it."""
    tenant = f"busy-{new_key()}"
    await set_caps(turns.client, tenant, TenantCaps(usd_per_day=0.25), turns.task_queue)
    keys = [new_key() for _ in range(6)]
    for key in keys:
        turns.fake.script(key, [fake.text("Done.", usage=USAGE)])
    handles = [await turns.start(tenant_request(key, tenant)) for key in keys]
    outcomes = await asyncio.gather(*(h.result() for h in handles), return_exceptions=True)
    refused = [o for o in outcomes if isinstance(o, WorkflowFailureError)]
    for failure in refused:
        assert isinstance(failure.cause, ApplicationError)
        assert failure.cause.type == TURN_BUDGET_EXCEEDED
    made = sum(len(turns.fake.requests_for(key)) for key in keys)
    assert refused and made == len(keys) - len(refused)
    spend = await tenant_spend(turns.client, tenant)
    assert spend.spent_day_usd <= 0.25 and spend.in_flight == 0
    assert abs(spend.spent_day_usd - 0.06 * made) < 1e-9


async def test_a_settlement_the_server_lost_is_asked_again_and_the_tenant_billed_once(
    turns: TurnRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The server loses an update in flight when it restarts (the chaos matrix's ledger row saw
    # a settlement dropped so): the SDK raises WorkflowUpdateFailedError. Here the first
    # settlement the activity sends fails that way before it leaves the process, and the real
    # ledger takes the second.
    key, tenant = new_key(), f"lost-{new_key()}"
    turns.fake.script(key, [fake.text("Done.", usage=USAGE)])
    real = Client.execute_update_with_start_workflow
    lost: list[str] = []

    async def loses_the_first_settlement(self: Client, update: Any, *args: Any, **kw: Any) -> Any:
        if update == UPDATE_SETTLE and not lost:
            lost.append(update)
            raise WorkflowUpdateFailedError(RuntimeError("the server restarted"))
        return await real(self, update, *args, **kw)

    monkeypatch.setattr(Client, "execute_update_with_start_workflow", loses_the_first_settlement)
    report = await (await turns.start(tenant_request(key, tenant))).result()
    assert lost == [UPDATE_SETTLE] and report.outcome == "completed"
    spend = await tenant_spend(turns.client, tenant)
    assert spend.in_flight == 0 and spend.reserved_usd == 0
    assert spend.spent_day_usd == pytest.approx(report.cost_usd) and report.cost_usd > 0
