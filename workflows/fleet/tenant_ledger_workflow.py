"""`TenantLedgerWorkflow`: one tenant's spend and caps, as a long-lived entity.

One per tenant (workflow id `turnkeeper-tenant/<name>`), shared by every worker and every turn
of the tenant. Model calls reserve their maximum cost with the `reserve` update before they are
made and `settle` after; `turnkeeper tenants set` sends `set_caps`; the `spend` query reads it.
The arithmetic is `workflows/fleet/tenant_spend.py`. Its history grows with every call, so it
continues as new, carrying its state, when Temporal suggests it or after `MAX_HANDLED` updates.

Why updates and not signals: a reservation needs an answer (granted or not) before the provider
is called, and an update carries one in a single round trip; the model-call activity sends it
with update-with-start (`turnkeeper/ground/tenant_ledger.py`), which also creates the ledger
of a new tenant. Workflow code could not: a workflow cannot send an update to another workflow, and
signals with replies would cost the turn a signal, a wait and a reply in its own history for
every call, where the activity already open for the call costs it nothing more.
"""

from __future__ import annotations

import asyncio
from typing import Final

from temporalio import workflow
from temporalio.common import VersioningBehavior

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts.tenants import (
        LEDGER_WORKFLOW_TYPE,
        QUERY_SPEND,
        SIGNAL_TENANT_CAPS_CHANGED,
        UPDATE_RESERVE,
        UPDATE_SET_CAPS,
        UPDATE_SETTLE,
        ReserveInput,
        ReserveResult,
        SetCapsInput,
        SettleInput,
        TenantSpend,
    )
    from turnkeeper.workflows.fleet.tenant_spend import LedgerState

# Updates one run handles before it continues as new: each is two or three events, so its history
# stays under one page of history (about 1,000 events). Why so low: a worker that is not the
# ledger's sticky one must fetch the whole history for an update's (speculative) workflow task;
# past one page, `bench.fleet` with 3 workers saw the ledger stop taking updates for minutes
# ("Task not found when completing", "expected to be able to fetch more events") at 1,400-1,600
# events, twice, while a run within one page never stalled.
MAX_HANDLED: Final = 300


@workflow.defn(name=LEDGER_WORKFLOW_TYPE)
class TenantLedgerWorkflow:
    @workflow.init
    def __init__(self, state: LedgerState) -> None:
        self._state = state
        # A run that has handled nothing never continues as new, so it cannot loop.
        self._handled = 0

    @workflow.run
    async def run(self, state: LedgerState) -> None:
        await workflow.wait_condition(self._history_is_long)
        # Let handlers in flight answer first, so no call gets an error.
        await workflow.wait_condition(workflow.all_handlers_finished)
        workflow.continue_as_new(self._state)

    def _history_is_long(self) -> bool:
        suggested = workflow.info().is_continue_as_new_suggested()
        return self._handled > 0 and (suggested or self._handled >= MAX_HANDLED)

    @workflow.update(name=UPDATE_RESERVE)
    def reserve(self, reservation: ReserveInput) -> ReserveResult:
        """Reserves a call's maximum cost, or refuses it naming the cap and the spend."""
        self._handled += 1
        refusal = self._state.reserve(
            reservation.key,
            reservation.amount_usd,
            workflow.now(),
            reservation.turn_workflow_id,
        )
        if refusal is not None:
            return ReserveResult(granted=False, message=refusal)
        return ReserveResult(granted=True)

    @workflow.update(name=UPDATE_SETTLE)
    def settle(self, settlement: SettleInput) -> TenantSpend:
        """Ends a call's reservation and spends what it cost."""
        self._handled += 1
        self._state.settle(settlement.key, settlement.cost_usd, workflow.now())
        return self._state.spend(workflow.now())

    @workflow.update(name=UPDATE_SET_CAPS)
    async def set_caps(self, new: SetCapsInput) -> TenantSpend:
        """Replaces the caps and tells every turn that waits for them to try again."""
        self._handled += 1
        woken = self._state.set_caps(new.caps, workflow.now())
        workflow.logger.info(
            "tenant caps set",
            extra={"tenant": self._state.tenant, "caps": new.caps.model_dump(), "woken": woken},
        )
        await asyncio.gather(*(_wake(turn) for turn in woken))
        return self._state.spend(workflow.now())

    @workflow.query(name=QUERY_SPEND)
    def spend(self) -> TenantSpend:
        # On a copy: reading rolls the period over, and a query must change nothing.
        return self._state.model_copy(deep=True).spend(workflow.now())


async def _wake(workflow_id: str) -> None:
    try:
        await workflow.get_external_workflow_handle(workflow_id).signal(SIGNAL_TENANT_CAPS_CHANGED)
    except Exception as err:  # the turn has ended since: nothing to wake
        workflow.logger.info("waiting turn not told of new caps: %s", err)


# AUTO_UPGRADE, as the approval cache and for its reason: the ledger never ends, so pinned it
# would keep its first build polling forever. Registered only by versioned workers.
@workflow.defn(name=LEDGER_WORKFLOW_TYPE, versioning_behavior=VersioningBehavior.AUTO_UPGRADE)
class UpgradingTenantLedgerWorkflow(TenantLedgerWorkflow):
    """`TenantLedgerWorkflow` as a versioned worker runs it: always on the current build."""

    @workflow.init
    def __init__(self, state: LedgerState) -> None:
        super().__init__(state)

    @workflow.run
    async def run(self, state: LedgerState) -> None:
        await super().run(state)
