"""Fair shares of the workers between tenants: the activities of a turn with a tenant carry
Temporal's Priority with `fairness_key` = the tenant, so that a matching server with fairness
enabled hands out tasks of a task queue round-robin between tenants (weighted by
`fairness_weight`, 1 by default), and a tenant with 1,000 tasks backlogged cannot starve one with
10. A turn without a tenant sends Temporal's default priority: the same commands as before."""

from __future__ import annotations

from temporalio import workflow
from temporalio.common import Priority

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts.turn import TurnRequest


def priority(request: TurnRequest) -> Priority:
    """The Priority of the turn's activities and children."""
    if request.tenant is None:
        return Priority.default
    return Priority(fairness_key=request.tenant)
