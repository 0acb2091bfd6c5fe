"""Which signed decisions, budget extensions and standing approvals a turn whose approvers have
public keys applies: each way one can be wrong gets its own refusal. (Whether a signature
verifies at all is tested in tests/unit/contracts/test_decision_signing.py.)"""

from __future__ import annotations

import base64
from datetime import timedelta

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from turnkeeper.contracts.approvals import SignedGrant, StandingApproval
from turnkeeper.contracts.budget_extension import ExtendBudgetInput
from turnkeeper.contracts.decision_signing import (
    CANONICAL_SIGNING_VERSION,
    LEGACY_SIGNING_VERSION,
    SIGNING_VERSION,
    public_key_line,
)
from turnkeeper.contracts.signals import ALL_PENDING, ApproveInput, SignedCall
from turnkeeper.contracts.turn import AgentSpec
from turnkeeper.workflows.approvals.signatures import (
    decision_problem,
    extension_problem,
    spent_key,
    standing_problem,
)

from tests.unit.builders import START

ANN = Ed25519PrivateKey.generate()
MALLORY = Ed25519PrivateKey.generate()
TURN = "turn-1"
RUN = "run-1"
LATER = START + timedelta(hours=1)
HARMLESS = {"path": "note.md", "content": "harmless"}
_BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

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


def call(tool: str = "write_file", call_input: dict | None = None) -> SignedCall:
    """A call of `tool` with `call_input` (the harmless write unless given) in TURN; `*`: all."""
    if tool == ALL_PENDING:
        return SignedCall(TURN, KEYED.id, ALL_PENDING, first_run_id=RUN)
    return SignedCall(TURN, KEYED.id, tool, HARMLESS if call_input is None else call_input, RUN)


def signed(
    made: ApproveInput,
    key: Ed25519PrivateKey = ANN,
    tool: str = "write_file",
    version: int = SIGNING_VERSION,
) -> ApproveInput:
    return made.signed_with(key, call(tool), LATER, version)


def check(
    made: ApproveInput,
    on: SignedCall | None = None,
    spent: tuple[str, ...] = (),
    version: int = SIGNING_VERSION,
    agent: AgentSpec = KEYED,
) -> str | None:
    return decision_problem(agent, made, on or call(), START, spent, version)


def problem(made: ApproveInput, on: SignedCall | None = None, **options: object) -> str:
    found = check(made, on, **options)  # type: ignore[arg-type]
    assert found is not None
    return found


def test_a_decision_signed_by_a_keyed_approver_applies() -> None:
    assert check(signed(decision())) is None


def test_an_agent_without_keys_ignores_signatures() -> None:
    assert check(decision(approver="bob"), agent=NAMES_ONLY) is None


def test_an_approver_without_a_key_is_refused() -> None:
    assert "'bob' has no public key in agent.approvers" in problem(decision(approver="bob"))
    assert problem(decision(approver="")).startswith("an anonymous approver has no public key")


def test_an_unsigned_decision_is_refused_with_how_to_sign_it() -> None:
    assert "(turnkeeper approve|reject --key)" in problem(decision())


def test_a_signature_by_another_key_does_not_verify() -> None:
    assert "signature does not verify" in problem(signed(decision(), key=MALLORY))


def test_a_signature_for_another_tool_does_not_verify() -> None:
    assert "signature does not verify" in problem(signed(decision(), tool="read_file"))


def test_a_signature_for_another_input_under_the_same_call_id_does_not_verify() -> None:
    # What the approver saw is bound: a later call under the same id, another input, is not it.
    mallory = call(call_input={"path": "note.md", "content": "MALLORY"})
    assert "signature does not verify" in problem(signed(decision()), mallory)


def test_a_signature_for_one_run_is_refused_by_a_later_turn_under_the_same_workflow_id() -> None:
    made = signed(decision())
    next_turn = SignedCall(TURN, KEYED.id, "write_file", HARMLESS, "run-of-the-next-turn")
    assert "signature does not verify" in problem(made, next_turn)


def test_a_format_2_signature_is_refused_by_a_format_3_run_and_verified_by_a_format_2_run() -> None:
    v2 = signed(decision(), version=CANONICAL_SIGNING_VERSION)
    assert "not as turnkeeper-decision-v3" in problem(v2)
    # A run whose history began before format 3 verifies it, as it did when it was recorded.
    assert check(v2, version=CANONICAL_SIGNING_VERSION) is None
    assert "does not verify" in problem(signed(decision()), version=CANONICAL_SIGNING_VERSION)


def test_a_format_1_signature_is_refused_by_a_format_3_run_and_verified_by_a_format_1_run() -> None:
    legacy = signed(decision(), version=LEGACY_SIGNING_VERSION)
    assert "not as turnkeeper-decision-v3" in problem(legacy)
    # A run whose history began before format 2 verifies it, as it did when it was recorded.
    assert check(legacy, version=LEGACY_SIGNING_VERSION) is None
    assert "does not verify" in problem(signed(decision()), version=LEGACY_SIGNING_VERSION)


def test_a_call_whose_input_canonical_json_cannot_express_cannot_be_decided_signed() -> None:
    huge = call(call_input={"count": 2**60})
    assert "the call's input cannot be signed" in problem(signed(decision()), huge)


def test_a_signed_decision_edited_afterwards_does_not_verify() -> None:
    edited = signed(decision()).model_copy(update={"reason": "changed"})
    assert "signature does not verify" in problem(edited)


def test_an_expired_signature_is_refused() -> None:
    found = decision_problem(KEYED, signed(decision()), call(), LATER, (), SIGNING_VERSION)
    assert found is not None and "signature expired at" in found


def test_a_signed_approve_all_decides_once() -> None:
    everything = signed(decision(call_id=ALL_PENDING), tool=ALL_PENDING)
    assert check(everything, call(ALL_PENDING)) is None
    key = spent_key(everything, call(ALL_PENDING), SIGNING_VERSION)
    used = problem(everything, call(ALL_PENDING), spent=(key,))
    assert "signature of '*' was used already" in used


def test_a_spent_star_is_named_by_what_was_signed_not_by_how_its_signature_is_spelled() -> None:
    everything = signed(decision(call_id=ALL_PENDING), tool=ALL_PENDING)
    assert everything.signature is not None
    value = everything.signature.value
    # The last character before '==' carries 2 bits of the signature and 4 unused ones.
    padding_bit = value[:-3] + _BASE64[_BASE64.index(value[-3]) ^ 1] + "=="
    assert base64.b64decode(padding_bit) == base64.b64decode(value)
    respelled = everything.model_copy(
        update={"signature": everything.signature.model_copy(update={"value": padding_bit})}
    )
    key = spent_key(everything, call(ALL_PENDING), SIGNING_VERSION)

    assert len(key) == 64 and key != value  # the SHA-256 of the signed bytes
    assert "not canonical base64" in problem(respelled, call(ALL_PENDING), spent=(key,))
    # Format 1 runs keep the signature's text, as their histories recorded it.
    assert spent_key(everything, call(ALL_PENDING), LEGACY_SIGNING_VERSION) == value


def extension(approver: str = "ann", **amounts: object) -> ExtendBudgetInput:
    return ExtendBudgetInput.model_validate({"iterations": 2, "approver": approver, **amounts})


def test_a_signed_extension_applies_to_its_own_request_only() -> None:
    made = extension().signed_with(ANN, TURN, KEYED.id, 1, LATER, first_run_id=RUN)
    assert extension_problem(KEYED, made, TURN, 1, START, SIGNING_VERSION, RUN) is None
    other = extension_problem(KEYED, made, TURN, 2, START, SIGNING_VERSION, RUN)
    assert other is not None and "signature does not verify" in other
    next_turn = extension_problem(KEYED, made, TURN, 1, START, SIGNING_VERSION, "run-2")
    assert next_turn is not None and "signature does not verify" in next_turn


def test_a_decision_signature_does_not_pass_for_an_extension() -> None:
    made = signed(decision())
    smuggled = extension().model_copy(update={"signature": made.signature})
    found = extension_problem(KEYED, smuggled, TURN, 1, START, SIGNING_VERSION, RUN)
    assert found is not None and "signature does not verify" in found


def test_an_unsigned_extension_is_refused_with_how_to_sign_it() -> None:
    found = extension_problem(KEYED, extension(), TURN, 1, START, SIGNING_VERSION)
    assert found is not None and "(turnkeeper extend --key)" in found
    assert extension_problem(NAMES_ONLY, extension(), TURN, 1, START, SIGNING_VERSION) is None


def standing(
    grant_for: ApproveInput | None, tool: str = "write_file", version: int = SIGNING_VERSION
) -> StandingApproval:
    grant = None
    if grant_for is not None:
        grant = SignedGrant.of(grant_for, call(), version)
    return StandingApproval(tool=tool, approver="ann", at=START, grant=grant)


def test_a_standing_approval_from_a_signed_remembered_approval_is_trusted() -> None:
    assert standing_problem(KEYED, standing(signed(decision(remember=True)))) is None
    assert standing_problem(NAMES_ONLY, standing(None)) is None


def test_a_grant_stored_before_format_2_still_verifies_in_format_1() -> None:
    legacy = signed(decision(remember=True), version=LEGACY_SIGNING_VERSION)
    approval = standing(legacy, version=LEGACY_SIGNING_VERSION)
    assert approval.grant is not None and approval.grant.call_input_sha256 is None
    assert standing_problem(KEYED, approval) is None
    # Relabelled as format 2 it does not verify: the label is part of what is checked.
    relabelled = approval.grant.model_copy(update={"signing_version": CANONICAL_SIGNING_VERSION})
    found = standing_problem(KEYED, approval.model_copy(update={"grant": relabelled}))
    assert found is not None and "does not verify" in found


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
