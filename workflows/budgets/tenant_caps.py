"""A turn whose tenant is at a spend cap (`TurnRequest.tenant`, the ledger in
`fleet/tenant_ledger_workflow.py`): the model-call activity refused the call before the provider saw
it, and the turn fails with TurnBudgetExceeded, or with `on_budget_exhausted: "pause"` waits in
`awaiting_budget` until the tenant's caps change (the ledger signals `tenant_caps_changed`) or
the UTC day turns over, and calls again. No activity is held open while it waits."""

from __future__ import annotations

import contextlib
from typing import NoReturn

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts import errors
    from turnkeeper.workflows.budgets.checks import BudgetExhausted, pauses
    from turnkeeper.workflows.failures import fail
    from turnkeeper.workflows.fleet.tenant_spend import next_turnover
    from turnkeeper.workflows.turn_state import Turn


class TenantCapWait(BudgetExhausted):
    """A pausing turn's tenant is at a cap: it waits for new caps or the next period, not for an
    `extend_budget` of its own."""


def cap_reached(turn: Turn, message: str) -> NoReturn:
    """Fails the turn with the ledger's refusal (naming tenant, cap and spend), or pauses it."""
    if pauses(turn):
        raise TenantCapWait("cost", errors.TURN_BUDGET_EXCEEDED, message)
    fail(turn, errors.TURN_BUDGET_EXCEEDED, message)


class CapsChanged:
    """Whether the tenant's ledger has said its caps changed since the turn last looked; set by
    the turn's `tenant_caps_changed` signal, which may come before the turn starts to wait."""

    def __init__(self) -> None:
        self.changed = False

    async def wait(self, turn: Turn) -> None:
        """Waits until the caps change, the period turns over or a human ends the budget
        request (an `extend_budget` of the turn's own cost budget), then ends the request."""
        now = workflow.now()
        until = next_turnover(now) - now
        with contextlib.suppress(TimeoutError):  # the period turned over: call again
            await workflow.wait_condition(
                lambda: self.changed or turn.budget.budget_request is None, timeout=until
            )
        self.changed = False
        if turn.budget.budget_request is not None:
            turn.give_up_budget_request(workflow.now())
