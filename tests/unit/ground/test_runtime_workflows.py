"""The failure that names a squatter at one of the runtime's own workflow ids: typed, not
retried, and saying what holds the id, what the runtime keeps there and what to do."""

from __future__ import annotations

from turnkeeper.contracts.errors import RUNTIME_ID_TAKEN

from turnkeeper.ground.runtime_workflows import taken


def test_a_squatter_is_named_with_what_to_do() -> None:
    error = taken("turnkeeper-tenant/acme", "AgentTurnWorkflow", "TenantLedgerWorkflow")
    assert (error.type, error.non_retryable) == (RUNTIME_ID_TAKEN, True)
    assert error.message == (
        "workflow turnkeeper-tenant/acme is a AgentTurnWorkflow, not the TenantLedgerWorkflow "
        "the runtime keeps there; terminate it "
        "(temporal workflow terminate --workflow-id turnkeeper-tenant/acme)"
    )
