"""docs/signing-vectors.json, the known answers that signers in other languages test against:
our code produces every byte of them (the JavaScript the security page prints is run against them
by node, a process, in tests/test_signing_javascript.py)."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from turnkeeper.contracts.budget_extension import ExtendBudgetInput
from turnkeeper.contracts.decision_signing import (
    DECISION,
    Signature,
    input_digest,
    parse_expires_at,
    public_key_line,
    sign,
    signature_problem,
    signed_bytes,
)
from turnkeeper.contracts.signals import ApproveInput, SignedCall
from turnkeeper.contracts.steering import CancelInput, InterruptInput, SteerInput

ROOT = Path(__file__).parents[3]
VECTORS = json.loads((ROOT / "docs" / "signing-vectors.json").read_text(encoding="utf-8"))
KEY = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(VECTORS["private_key_seed_hex"]))


def vector_ids(vector: dict[str, Any]) -> str:
    return vector["name"]


INTERVENTIONS = {"steer": SteerInput, "interrupt": InterruptInput, "cancel": CancelInput}


def fields_from_payload(vector: dict[str, Any]) -> dict[str, Any]:
    """The signed fields as the product derives them from what a client sends."""
    workflow_id, agent_id, run = (
        VECTORS["workflow_id"],
        VECTORS["agent_id"],
        VECTORS["first_run_id"],
    )
    if vector["kind"] == DECISION:
        tool, call_input = vector["call"]["tool"], vector["call"]["input"]
        call = SignedCall(workflow_id, agent_id, tool, call_input, run)
        return ApproveInput.model_validate(vector["payload"]).signed_fields(call)
    if vector["kind"] in INTERVENTIONS:
        payload = INTERVENTIONS[vector["kind"]].model_validate(vector["payload"])
        return payload.signed_fields(workflow_id, agent_id, run)
    extension = ExtendBudgetInput.model_validate(vector["payload"])
    return extension.signed_fields(workflow_id, agent_id, vector["request"], run)


def test_every_kind_has_a_vector() -> None:
    kinds = {vector["kind"] for vector in VECTORS["vectors"]}
    assert {DECISION, "budget-extension", "steer", "cancel"} <= kinds


@pytest.mark.parametrize("vector", VECTORS["vectors"], ids=vector_ids)
def test_our_signer_gives_every_byte_of_the_vector(vector: dict[str, Any]) -> None:
    expected = bytes.fromhex(vector["signed_bytes_hex"])

    made = signed_bytes(vector["kind"], vector["fields"], vector["expires_at"])
    signature = sign(KEY, vector["kind"], vector["fields"], parse_expires_at(vector["expires_at"]))

    assert made == expected == vector["signed_text"].encode("utf-8")
    assert fields_from_payload(vector) == vector["fields"]
    assert signature == Signature(expires_at=vector["expires_at"], value=vector["signature"])
    assert vector["fields"]["first_run_id"] == VECTORS["first_run_id"]
    if vector["kind"] == DECISION and vector["call"]["input"] is not None:
        assert input_digest(vector["call"]["input"]) == vector["fields"]["call_input_sha256"]


@pytest.mark.parametrize("vector", VECTORS["vectors"], ids=vector_ids)
def test_our_verifier_accepts_the_vector_and_nothing_else(vector: dict[str, Any]) -> None:
    signature = Signature(expires_at=vector["expires_at"], value=vector["signature"])
    public = VECTORS["public_key"]
    before = parse_expires_at(vector["expires_at"]) - timedelta(days=1)

    assert public_key_line(KEY) == public
    assert signature_problem(vector["kind"], vector["fields"], signature, public, before) is None
    changed = {**vector["fields"], "approver": "mallory"}
    assert "does not verify" in str(
        signature_problem(vector["kind"], changed, signature, public, before)
    )
