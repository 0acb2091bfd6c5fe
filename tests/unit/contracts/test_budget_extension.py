"""A budget extension as it is signed and recorded: its signature is of its own kind, so it can
never pass for a tool decision over the same fields, and an extension recorded without saying
whether it was signed reads as unsigned."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from turnkeeper.contracts.budget_extension import BudgetExtension, ExtendBudgetInput
from turnkeeper.contracts.decision_signing import (
    BUDGET_EXTENSION,
    DECISION,
    public_key_line,
    signature_problem,
)

KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
NOW = datetime(2026, 3, 8, 12, tzinfo=UTC)


def test_an_extension_signature_verifies_as_an_extension_and_never_as_a_decision() -> None:
    extension = ExtendBudgetInput(iterations=2, approver="ann", reason="nearly done")
    expires = NOW + timedelta(minutes=5)
    signed = extension.signed_with(KEY, "turn-1", "agent-1", 1, expires, first_run_id="run-1")
    assert signed.signature is not None
    fields = extension.signed_fields("turn-1", "agent-1", 1, "run-1")
    key = public_key_line(KEY)

    assert signature_problem(BUDGET_EXTENSION, fields, signed.signature, key, NOW) is None
    found = signature_problem(DECISION, fields, signed.signature, key, NOW)
    assert found is not None and "does not verify" in found


def test_an_extension_covers_the_request_it_answers_and_every_amount() -> None:
    extension = ExtendBudgetInput(cost_usd=0.5, time_ms=1000, approver="ann")

    assert extension.signed_fields("turn-1", "agent-1", 3) == {
        "workflow_id": "turn-1",
        "agent_id": "agent-1",
        "request": 3,
        "cost_usd": 0.5,
        "time_ms": 1000,
        "iterations": None,
        "tool_interactions": None,
        "approver": "ann",
        "reason": "",
    }


def test_an_extension_recorded_without_its_signed_flag_reads_as_unsigned() -> None:
    recorded = {"request": 1, "budget": "cost", "cost_usd": 0.5, "at": NOW.isoformat()}
    assert BudgetExtension.model_validate(recorded).signed is False
