"""Which signed decisions, budget extensions and standing approvals a turn whose approvers have
public keys applies: each way one can be wrong gets its own refusal. (Whether a signature
verifies at all is tested in tests/contracts/test_decision_signing.py.)"""

from __future__ import annotations

from datetime import timedelta

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from turnkeeper.contracts.approvals import SignedGrant, StandingApproval
from turnkeeper.contracts.budget_extension import ExtendBudgetInput
from turnkeeper.contracts.decision_signing import public_key_line
from turnkeeper.contracts.signals import ALL_PENDING, ApproveInput
from turnkeeper.contracts.turn import AgentSpec
from turnkeeper.workflows.signed_decisions import (
    decision_problem,
    extension_problem,
    standing_problem,
)

from tests.unit.builders import START

ANN = Ed25519PrivateKey.generate()
MALLORY = Ed25519PrivateKey.generate()
TURN = "turn-1"
LATER = START + timedelta(hours=1)

KEYED = AgentSpec.model_validate(
    {
        "id": "keyed",
        "model": "anthropic:claude-sonnet-4-6",
        "approvers": [{"name": "ann", "public_key": public_key_line(ANN)}, "bob"],
    }
)
NAMES_ONLY = KEYED.model_copy(update={"approvers": ["ann", "bob"]})


def decision(call_id: str = "c1", approver: str = "ann", **fields: object) -> ApproveInput:
    return ApproveInput.model_validate(
        {"call_id": call_id, "approved": True, "approver": approver, **fields}
    )


def signed(
    made: ApproveInput, key: Ed25519PrivateKey = ANN, tool: str = "write_file"
) -> ApproveInput:
    return made.signed_with(key, TURN, KEYED.id, tool, LATER)


def problem(made: ApproveInput, tool: str = "write_file", spent: tuple[str, ...] = ()) -> str:
    found = decision_problem(KEYED, made, TURN, tool, START, spent)
    assert found is not None
    return found


def test_a_decision_signed_by_a_keyed_approver_applies() -> None:
    assert decision_problem(KEYED, signed(decision()), TURN, "write_file", START, ()) is None


def test_an_agent_without_keys_ignores_signatures() -> None:
    assert decision_problem(NAMES_ONLY, decision(approver="bob"), TURN, "x", START, ()) is None


def test_an_approver_without_a_key_is_refused() -> None:
    assert "'bob' has no public key in agent.approvers" in problem(decision(approver="bob"))
    assert problem(decision(approver="")).startswith("an anonymous approver has no public key")


def test_an_unsigned_decision_is_refused_with_how_to_sign_it() -> None:
    assert "(turnkeeper approve|reject --key)" in problem(decision())


def test_a_signature_by_another_key_does_not_verify() -> None:
    assert "signature does not verify" in problem(signed(decision(), key=MALLORY))


def test_a_signature_for_another_tool_does_not_verify() -> None:
    assert "signature does not verify" in problem(signed(decision(), tool="read_file"))


def test_a_signed_decision_edited_afterwards_does_not_verify() -> None:
    edited = signed(decision()).model_copy(update={"reason": "changed"})
    assert "signature does not verify" in problem(edited)


def test_an_expired_signature_is_refused() -> None:
    found = decision_problem(KEYED, signed(decision()), TURN, "write_file", LATER, ())
    assert found is not None and "signature expired at" in found


def test_a_signed_approve_all_decides_once() -> None:
    everything = signed(decision(call_id=ALL_PENDING), tool=ALL_PENDING)
    assert decision_problem(KEYED, everything, TURN, ALL_PENDING, START, ()) is None
    assert everything.signature is not None
    used = problem(everything, tool=ALL_PENDING, spent=(everything.signature.value,))
    assert "signature of '*' was used already" in used


def extension(approver: str = "ann", **amounts: object) -> ExtendBudgetInput:
    return ExtendBudgetInput.model_validate({"iterations": 2, "approver": approver, **amounts})


def test_a_signed_extension_applies_to_its_own_request_only() -> None:
    made = extension().signed_with(ANN, TURN, KEYED.id, 1, LATER)
    assert extension_problem(KEYED, made, TURN, 1, START) is None
    other = extension_problem(KEYED, made, TURN, 2, START)
    assert other is not None and "signature does not verify" in other


def test_a_decision_signature_does_not_pass_for_an_extension() -> None:
    made = signed(decision())
    smuggled = extension().model_copy(update={"signature": made.signature})
    found = extension_problem(KEYED, smuggled, TURN, 1, START)
    assert found is not None and "signature does not verify" in found


def test_an_unsigned_extension_is_refused_with_how_to_sign_it() -> None:
    found = extension_problem(KEYED, extension(), TURN, 1, START)
    assert found is not None and "(turnkeeper extend --key)" in found
    assert extension_problem(NAMES_ONLY, extension(), TURN, 1, START) is None


def standing(grant_for: ApproveInput | None, tool: str = "write_file") -> StandingApproval:
    grant = None
    if grant_for is not None:
        grant = SignedGrant.of(grant_for, TURN, KEYED.id, "write_file")
    return StandingApproval(tool=tool, approver="ann", at=START, grant=grant)


def test_a_standing_approval_from_a_signed_remembered_approval_is_trusted() -> None:
    assert standing_problem(KEYED, standing(signed(decision(remember=True)))) is None
    assert standing_problem(NAMES_ONLY, standing(None)) is None


def test_a_standing_approval_without_a_grant_is_not_trusted_by_a_keyed_turn() -> None:
    assert standing_problem(KEYED, standing(None)) == "it was not granted by a signed decision"


def test_a_grant_that_did_not_remember_is_not_a_standing_approval() -> None:
    found = standing_problem(KEYED, standing(signed(decision())))
    assert found == "its signed decision did not approve and remember the call"


def test_a_grant_stored_under_another_tool_is_refused() -> None:
    found = standing_problem(KEYED, standing(signed(decision(remember=True)), tool="run_shell"))
    assert found is not None and "was for tool 'write_file'" in found


def test_a_grant_by_an_approver_without_a_key_is_refused() -> None:
    mallory = signed(decision(approver="mallory", remember=True), key=MALLORY)
    found = standing_problem(KEYED, standing(mallory))
    assert found == "'mallory', who granted it, has no public key in this turn's approvers"
