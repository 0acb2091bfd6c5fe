"""Budgets a human can extend, inside the turn: with `on_budget_exhausted: "pause"`, a spent
budget stops the turn in state `awaiting_budget` until an `extend_budget` update adds to it or
`approval_timeout_s` passes. The wait is a condition on workflow state, like an approval: no
activity is held open, and the time does not count against the time budget."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Final, TypeVar

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts.budget_extension import AMOUNT_FIELDS, ExtendBudgetInput
    from turnkeeper.workflows.approvals import signatures as signed_decisions
    from turnkeeper.workflows.budgets import tenant_caps
    from turnkeeper.workflows.budgets.checks import BudgetExhausted, limits
    from turnkeeper.workflows.failures import fail
    from turnkeeper.workflows.observation.turn_observer import TurnObserver
    from turnkeeper.workflows.turn_state import Turn


T = TypeVar("T")


class BudgetExtensions:
    def __init__(self, observer: TurnObserver) -> None:
        self._observer = observer
        self.tenant_caps = tenant_caps.CapsChanged()

    async def retrying(self, turn: Turn, step: Callable[[], Awaitable[T]]) -> T | None:
        """Runs `step` until no spent budget stops it: each time a pausing turn's `step` finds a
        budget spent, waits for a human to extend it and runs `step` again. Without an extension
        in time the turn fails with that budget's error, except for a budget the turn goes on
        without (tool interactions), where the wait ends with None."""
        while True:
            try:
                return await step()
            except BudgetExhausted as exhausted:
                if not await self.await_extension(turn, exhausted):
                    return None

    async def checking(self, turn: Turn, check: Callable[[Turn], None]) -> None:
        """`retrying` for a check of the turn's budgets."""

        async def checked() -> None:
            check(turn)

        await self.retrying(turn, checked)

    async def await_extension(self, turn: Turn, exhausted: BudgetExhausted) -> bool:
        """Waits for a human to extend the spent budget. True once extended; without an extension
        in time the turn fails with the budget's error, except a spent tool-interaction budget,
        whose turn goes on as any turn does without one (False: the model gets no tools)."""
        request = turn.request_budget(exhausted.budget, exhausted.message, workflow.now())
        self._observer.budget_exhausted(turn, request)
        if isinstance(exhausted, tenant_caps.TenantCapWait):
            await self.tenant_caps.wait(turn)
            self._observer.budget_wait_ended(turn)
            return True
        timeout_s = turn.request.task.constraints.approval_timeout_s
        try:
            await workflow.wait_condition(
                lambda: turn.budget.budget_request is None, timeout=timeout_s
            )
        except TimeoutError:
            turn.give_up_budget_request(workflow.now())
            self._observer.budget_wait_ended(turn)
            if not exhausted.error_type:
                return False
            fail(
                turn,
                exhausted.error_type,
                f"{exhausted.message}; no budget extension came within {timeout_s:g} s",
            )
        self._observer.budget_extended(turn, turn.budget.budget_extensions[-1])
        return True


def extension_problem(turn: Turn, extension: ExtendBudgetInput, workflow_id: str) -> str | None:
    """Why `extension` must not be applied now (no budget waits, it adds nothing to the spent
    budget or to a budget the turn does not have, an approver not allowed, a bad signature),
    or None."""
    request = turn.budget.budget_request
    if request is None:
        return f"the turn is not waiting for a budget extension (state {turn.state})"
    amounts = extension.amounts()
    if request.budget not in amounts:
        return (
            f"the turn waits for more {request.budget.replace('_', ' ')} "
            f"({AMOUNT_FIELDS[request.budget]}); this extension adds none"
        )
    now = limits(turn)
    for budget in amounts:
        if getattr(now, _LIMIT_FIELDS[budget]) is None:
            return f"{AMOUNT_FIELDS[budget]}: the turn's {budget.replace('_', ' ')} is unlimited"
    agent = turn.request.agent
    approvers = agent.approver_names()
    if approvers is not None and extension.approver not in approvers:
        who = repr(extension.approver) if extension.approver else "an anonymous approver"
        return f"{who} may not extend budgets of this agent (approvers: {', '.join(approvers)})"
    return signed_decisions.extension_problem(
        agent,
        extension,
        workflow_id,
        request.number,
        workflow.now(),
        turn.approvals.signing_version,
        turn.approvals.signed_run_id,
    )


# The field of BudgetLimits that each budget extends.
_LIMIT_FIELDS: Final = {
    "cost": "cost_budget_usd",
    "time": "time_budget_ms",
    "iterations": "max_iterations",
    "tool_interactions": "max_tool_interactions",
}
