"""What the client signs for a turn, from the turn's status alone: the format the status names,
bound to the turn's first run from format 3 (a sub-agent's call to the child's), and never a run
for a turn that began before format 3, whose history verifies format 2."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from turnkeeper.contracts.budget_extension import BudgetRequest, ExtendBudgetInput
from turnkeeper.contracts.decision_signing import (
    BUDGET_EXTENSION,
    DECISION,
    public_key_line,
    signature_problem,
)
from turnkeeper.contracts.signals import ApproveInput, PendingCall, SignedCall, TurnStatus
from turnkeeper.contracts.steering import CANCEL, CancelInput

from turnkeeper.client.signatures import signed_decision, signed_extension, signed_intervention

KEY = Ed25519PrivateKey.generate()
PUBLIC = public_key_line(KEY)
SINCE = datetime(2026, 1, 1, tzinfo=UTC)
WRITE = {"path": "a.md", "content": "A"}
LIFETIME = timedelta(minutes=5)


def status(version: int, **fields: object) -> TurnStatus:
    pending = [
        PendingCall(call_id="c1", tool="write_file", input=WRITE, kind="approval", since=SINCE),
        PendingCall(
            call_id="c2", tool="write_file", input=WRITE, kind="approval", since=SINCE,
            workflow_id="turn-1/writer-1", agent_id="writer", first_run_id="child-run",
        ),
    ]  # fmt: skip
    return TurnStatus.model_validate(
        {"state": "awaiting_approval", "agent_id": "agent", "signing_version": version,
         "first_run_id": "run-1", "pending": pending, **fields}
    )  # fmt: skip


@pytest.mark.parametrize(("version", "run"), [(3, "run-1"), (2, None)])
def test_a_decision_is_signed_in_the_format_the_status_names(version: int, run: str | None) -> None:
    decision = ApproveInput(call_id="c1", approved=True)
    signed = signed_decision(decision, status(version), "turn-1", KEY, LIFETIME)
    assert signed.signature is not None

    call = SignedCall("turn-1", "agent", "write_file", WRITE, run)
    fields = signed.signed_fields(call, version)

    assert ("first_run_id" in fields) == (version == 3)
    assert signature_problem(DECISION, fields, signed.signature, PUBLIC, None, version) is None


def test_a_sub_agents_call_is_signed_for_the_childs_first_run() -> None:
    decision = ApproveInput(call_id="c2", approved=True)
    signed = signed_decision(decision, status(3), "turn-1", KEY, LIFETIME)
    assert signed.signature is not None

    in_child = SignedCall("turn-1/writer-1", "writer", "write_file", WRITE, "child-run")
    in_lead = SignedCall("turn-1/writer-1", "writer", "write_file", WRITE, "run-1")

    assert (
        signature_problem(DECISION, signed.signed_fields(in_child), signed.signature, PUBLIC, None)
        is None
    )
    assert "does not verify" in str(
        signature_problem(DECISION, signed.signed_fields(in_lead), signed.signature, PUBLIC, None)
    )


@pytest.mark.parametrize(("version", "run"), [(3, "run-1"), (2, None)])
def test_a_cancel_and_an_extension_bind_the_run_where_the_format_does(
    version: int, run: str | None
) -> None:
    request = BudgetRequest(number=1, budget="cost", message="spent", since=SINCE)
    now = status(version, budget_request=request)
    cancel = signed_intervention(CancelInput(author="alice"), now, "turn-1", KEY, LIFETIME)
    extension = signed_extension(ExtendBudgetInput(cost_usd=1), now, "turn-1", KEY, LIFETIME)
    assert cancel.signature is not None and extension.signature is not None

    cancelled = cancel.signed_fields("turn-1", "agent", run)
    extended = extension.signed_fields("turn-1", "agent", 1, run)

    assert signature_problem(CANCEL, cancelled, cancel.signature, PUBLIC, None, version) is None
    assert (
        signature_problem(BUDGET_EXTENSION, extended, extension.signature, PUBLIC, None, version)
        is None
    )
