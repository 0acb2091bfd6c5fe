"""The signed-decision format, byte for byte, and the checks a turn runs on a signature: pure
functions, so no server is needed. Format 3's known answers, for other languages too, are in
docs/signing-vectors.json (tests/unit/contracts/test_signing_vectors.py)."""

from __future__ import annotations

import base64
import hashlib
from datetime import UTC, datetime, timedelta

import pytest
from cryptography.hazmat.primitives.asymmetric.ec import SECP256R1, generate_private_key
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from pydantic import ValidationError
from turnkeeper.contracts.approvals import SignedGrant
from turnkeeper.contracts.budget_extension import ExtendBudgetInput
from turnkeeper.contracts.decision_signing import (
    BUDGET_EXTENSION,
    CANONICAL_SIGNING_VERSION,
    DECISION,
    LEGACY_SIGNING_VERSION,
    Signature,
    decision_fields,
    input_digest,
    parse_expires_at,
    parse_public_key,
    public_key_line,
    sign,
    signature_problem,
    signed_bytes,
)
from turnkeeper.contracts.signals import ApproveInput, SignedCall
from turnkeeper.contracts.steering import CANCEL, INTERRUPT, STEER, CancelInput, InterruptInput
from turnkeeper.contracts.turn import AgentSpec

from tests.unit.contracts.decision_examples import UNSIGNED_DECISION

# A fixed key and its format 1 signature, checked against `openssl pkeyutl -sign -rawin` when
# written: any other Ed25519 implementation must produce the same value for the same bytes.
KNOWN_KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
KNOWN_PUBLIC = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAOhB7/zzhC+HXDdGOdLwJln5NYwm6UNXx3chmQSVTG4"
KNOWN_EXPIRES_AT = "2026-11-23T15:04:05Z"
LEGACY_VALUE = (
    "UVaXENGnqRZdDe6/QrPLwgA67mRasSU+BlEI9DAKaRAj9Oh53RCN6QHv50gj8C9qkn1m0XW7RgBaDY4sdJKsBQ=="
)
KNOWN_INPUT = {"path": "summary.md", "content": "# Summary\n"}
KNOWN_RUN = "0195f0c2-7d0e-7a41-9c3b-5e2d8f1a6b4c"
KNOWN_FIELDS = decision_fields(
    **UNSIGNED_DECISION, call_input_sha256=input_digest(KNOWN_INPUT), first_run_id=KNOWN_RUN
)
V2_FIELDS = decision_fields(
    **UNSIGNED_DECISION,
    call_input_sha256=input_digest(KNOWN_INPUT),
    version=CANONICAL_SIGNING_VERSION,
)
LEGACY_FIELDS = decision_fields(
    **UNSIGNED_DECISION, call_input_sha256=None, version=LEGACY_SIGNING_VERSION
)
BEFORE_EXPIRY = datetime(2026, 11, 23, 15, 4, 4, tzinfo=UTC)
KNOWN_SIGNATURE = sign(KNOWN_KEY, DECISION, KNOWN_FIELDS, BEFORE_EXPIRY + timedelta(seconds=1))
_BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def test_signed_bytes_are_the_documented_context_and_canonical_json() -> None:
    expected = (
        b"turnkeeper-decision-v3\n"
        b'{"agent_id":"research-assistant","approved":true,"approver":"alice",'
        b'"call_id":"toolu_01","call_input_sha256":"' + input_digest(KNOWN_INPUT).encode() + b'",'
        b'"expires_at":"2026-11-23T15:04:05Z","first_run_id":"' + KNOWN_RUN.encode() + b'",'
        b'"input":null,'
        b'"reason":"looks fine","remember":false,"tool":"write_file","workflow_id":"turn-1"}'
    )
    assert signed_bytes(DECISION, KNOWN_FIELDS, KNOWN_EXPIRES_AT) == expected


def test_format_2_bytes_are_as_they_were_without_a_run() -> None:
    # Runs whose history began before format 3 verify these, so that their replays agree.
    expected = (
        b"turnkeeper-decision-v2\n"
        b'{"agent_id":"research-assistant","approved":true,"approver":"alice",'
        b'"call_id":"toolu_01","call_input_sha256":"' + input_digest(KNOWN_INPUT).encode() + b'",'
        b'"expires_at":"2026-11-23T15:04:05Z","input":null,'
        b'"reason":"looks fine","remember":false,"tool":"write_file","workflow_id":"turn-1"}'
    )
    expires = BEFORE_EXPIRY + timedelta(seconds=1)
    v2 = sign(KNOWN_KEY, DECISION, V2_FIELDS, expires, CANONICAL_SIGNING_VERSION)

    assert signed_bytes(DECISION, V2_FIELDS, KNOWN_EXPIRES_AT, CANONICAL_SIGNING_VERSION) == (
        expected
    )
    assert signature_problem(DECISION, V2_FIELDS, v2, KNOWN_PUBLIC, BEFORE_EXPIRY, 2) is None
    # A format 2 signature binds no run: a format 3 turn refuses it whatever run it claims.
    assert "not as turnkeeper-decision-v3" in str(
        signature_problem(DECISION, KNOWN_FIELDS, v2, KNOWN_PUBLIC, BEFORE_EXPIRY)
    )


def test_format_3_needs_a_run_and_the_formats_before_it_take_none() -> None:
    with pytest.raises(ValueError, match="binds the turn's first run"):
        signed_bytes(DECISION, V2_FIELDS, KNOWN_EXPIRES_AT)
    with pytest.raises(ValueError, match="binds the turn's first run"):
        signed_bytes(DECISION, {**KNOWN_FIELDS, "first_run_id": ""}, KNOWN_EXPIRES_AT)
    with pytest.raises(ValueError, match="format 2 signs no 'first_run_id'"):
        signed_bytes(DECISION, KNOWN_FIELDS, KNOWN_EXPIRES_AT, CANONICAL_SIGNING_VERSION)
    with pytest.raises(ValueError, match="no signing format version 4"):
        signed_bytes(DECISION, KNOWN_FIELDS, KNOWN_EXPIRES_AT, 4)
    # A verifier told of no run refuses rather than accepting a signature that binds none.
    problem = signature_problem(DECISION, V2_FIELDS, KNOWN_SIGNATURE, KNOWN_PUBLIC, BEFORE_EXPIRY)
    assert problem is not None and "binds the turn's first run" in problem


def test_a_signature_for_one_run_does_not_verify_for_another_run_of_the_workflow_id() -> None:
    other_run = {**KNOWN_FIELDS, "first_run_id": "0195f0c2-0000-7000-8000-000000000000"}

    problem = signature_problem(DECISION, other_run, KNOWN_SIGNATURE, KNOWN_PUBLIC, BEFORE_EXPIRY)

    assert problem is not None and "does not verify" in problem


@pytest.mark.parametrize(
    ("payload", "kind"),
    [
        (CancelInput(reason="wrong workspace", author="alice"), CANCEL),
        (InterruptInput(reason="wrong workspace", author="alice"), INTERRUPT),
    ],
    ids=["cancel", "interrupt"],
)
def test_interventions_bind_the_run_and_their_own_kind(
    payload: CancelInput | InterruptInput, kind: str
) -> None:
    signed = payload.signed_with(KNOWN_KEY, "turn-1", "research-assistant", BEFORE_EXPIRY, 3, "r1")
    assert signed.signature is not None
    fields = payload.signed_fields("turn-1", "research-assistant", "r1")

    assert fields == {
        "workflow_id": "turn-1",
        "agent_id": "research-assistant",
        "author": "alice",
        "reason": "wrong workspace",
        "first_run_id": "r1",
    }
    check = signature_problem(kind, fields, signed.signature, KNOWN_PUBLIC, None)
    assert check is None
    elsewhere = payload.signed_fields("turn-1", "research-assistant", "r2")
    assert "does not verify" in str(
        signature_problem(kind, elsewhere, signed.signature, KNOWN_PUBLIC, None)
    )
    # A cancel cannot pass for an interrupt with the same reason, nor the other way round.
    other = INTERRUPT if kind == CANCEL else CANCEL
    assert "does not verify" in str(
        signature_problem(other, fields, signed.signature, KNOWN_PUBLIC, None)
    )
    assert kind not in (STEER, DECISION)


def test_the_input_digest_is_the_sha256_of_the_jcs_of_the_input() -> None:
    # JCS: keys sorted, no spaces, numbers as JavaScript writes them (1.0 is 1), UTF-8.
    assert input_digest({"b": 1.0, "a": "é"}) == input_digest({"a": "é", "b": 1})
    canonical = b'{"content":"# Summary\\n","path":"summary.md"}'
    assert input_digest(KNOWN_INPUT) == hashlib.sha256(canonical).hexdigest()


def test_numbers_are_signed_as_javascript_and_go_write_them() -> None:
    # The reason for format 2: Python wrote 5.0, which no JavaScript or Go signer produces.
    extension = ExtendBudgetInput(cost_usd=5, approver="alice")
    fields = extension.signed_fields("turn-1", "research-assistant", 1, KNOWN_RUN)

    signed = signed_bytes(BUDGET_EXTENSION, fields, KNOWN_EXPIRES_AT)

    assert signed.startswith(b"turnkeeper-budget-extension-v3\n")
    assert b'"cost_usd":5,' in signed
    fields = extension.signed_fields("turn-1", "research-assistant", 1)
    legacy = signed_bytes(BUDGET_EXTENSION, fields, KNOWN_EXPIRES_AT, LEGACY_SIGNING_VERSION)
    assert b'"cost_usd":5.0,' in legacy


def test_non_ascii_is_signed_as_utf8_not_escaped() -> None:
    fields = {**KNOWN_FIELDS, "reason": "ça va ✓"}
    assert "ça va ✓".encode() in signed_bytes(DECISION, fields, KNOWN_EXPIRES_AT)


def test_format_1_bytes_and_signatures_are_as_they_were() -> None:
    # Runs whose history began before format 2 verify these, so that their replays agree.
    expected = (
        b"turnkeeper-decision-v1\n"
        b'{"agent_id":"research-assistant","approved":true,"approver":"alice",'
        b'"call_id":"toolu_01","expires_at":"2026-11-23T15:04:05Z","input":null,'
        b'"reason":"looks fine","remember":false,"tool":"write_file","workflow_id":"turn-1"}'
    )
    expires = datetime(2026, 11, 23, 15, 4, 5, 999_000, tzinfo=UTC)  # whole seconds are signed
    signature = sign(KNOWN_KEY, DECISION, LEGACY_FIELDS, expires, LEGACY_SIGNING_VERSION)

    assert signed_bytes(DECISION, LEGACY_FIELDS, KNOWN_EXPIRES_AT, 1) == expected
    assert signature == Signature(expires_at=KNOWN_EXPIRES_AT, value=LEGACY_VALUE)
    assert public_key_line(KNOWN_KEY) == KNOWN_PUBLIC
    assert (
        signature_problem(DECISION, LEGACY_FIELDS, signature, KNOWN_PUBLIC, BEFORE_EXPIRY, 1)
        is None
    )
    assert "not as turnkeeper-decision-v3" in str(
        signature_problem(DECISION, KNOWN_FIELDS, signature, KNOWN_PUBLIC, BEFORE_EXPIRY)
    )


def test_signing_the_known_fields_verifies() -> None:
    assert KNOWN_SIGNATURE.expires_at == KNOWN_EXPIRES_AT  # whole seconds are signed
    assert (
        signature_problem(DECISION, KNOWN_FIELDS, KNOWN_SIGNATURE, KNOWN_PUBLIC, BEFORE_EXPIRY)
        is None
    )


def test_a_key_line_with_a_comment_verifies_too() -> None:
    line = KNOWN_PUBLIC + " alice@laptop"
    assert signature_problem(DECISION, KNOWN_FIELDS, KNOWN_SIGNATURE, line, BEFORE_EXPIRY) is None


def test_only_the_base64_an_encoder_writes_is_accepted() -> None:
    # 64 bytes end in one character with 4 unused bits and '==': 16 spellings, one signature.
    value = KNOWN_SIGNATURE.value
    respelled = value[:-3] + _BASE64[_BASE64.index(value[-3]) ^ 1] + "=="
    flipped = KNOWN_SIGNATURE.model_copy(update={"value": respelled})
    assert base64.b64decode(respelled) == base64.b64decode(value)

    problem = signature_problem(DECISION, KNOWN_FIELDS, flipped, KNOWN_PUBLIC, BEFORE_EXPIRY)

    assert problem == "signature value is not canonical base64 (its unused bits must be zero)"
    # Format 1 took any spelling; its runs still do, as their histories recorded.
    legacy = sign(KNOWN_KEY, DECISION, LEGACY_FIELDS, BEFORE_EXPIRY, LEGACY_SIGNING_VERSION)
    legacy_flipped = legacy.model_copy(
        update={"value": legacy.value[:-3] + _BASE64[_BASE64.index(legacy.value[-3]) ^ 1] + "=="}
    )
    assert signature_problem(DECISION, LEGACY_FIELDS, legacy_flipped, KNOWN_PUBLIC, None, 1) is None


@pytest.mark.parametrize(
    "change",
    [
        {"workflow_id": "turn-2"},
        {"call_id": "toolu_02"},
        {"approved": False},
        {"input": {"path": "elsewhere.md"}},
        {"reason": "looks fine!"},
        {"remember": True},
        {"approver": "bob"},
        {"call_input_sha256": input_digest({**KNOWN_INPUT, "content": "MALLORY"})},
        {"first_run_id": "another-run"},
    ],
    ids=lambda change: next(iter(change)),
)
def test_every_signed_field_is_bound(change: dict) -> None:
    fields = {**KNOWN_FIELDS, **change}

    problem = signature_problem(DECISION, fields, KNOWN_SIGNATURE, KNOWN_PUBLIC, BEFORE_EXPIRY)

    assert problem is not None and "does not verify" in problem


def test_the_expiry_is_signed_and_enforced() -> None:
    signature = KNOWN_SIGNATURE
    later = signature.model_copy(update={"expires_at": "2027-11-23T15:04:05Z"})
    at_expiry = datetime(2026, 11, 23, 15, 4, 5, tzinfo=UTC)

    assert "does not verify" in str(
        signature_problem(DECISION, KNOWN_FIELDS, later, KNOWN_PUBLIC, BEFORE_EXPIRY)
    )
    assert signature_problem(DECISION, KNOWN_FIELDS, signature, KNOWN_PUBLIC, at_expiry) == (
        "signature expired at 2026-11-23T15:04:05Z"
    )
    # Without a clock only the signature is checked (a standing grant, verified at grant time).
    assert signature_problem(DECISION, KNOWN_FIELDS, signature, KNOWN_PUBLIC, None) is None


def test_another_kind_does_not_accept_a_decision_signature() -> None:
    problem = signature_problem(
        "budget-extension", KNOWN_FIELDS, KNOWN_SIGNATURE, KNOWN_PUBLIC, BEFORE_EXPIRY
    )
    assert problem is not None and "does not verify" in problem


def test_a_signature_by_another_key_does_not_verify() -> None:
    signature = sign(
        Ed25519PrivateKey.generate(), DECISION, KNOWN_FIELDS, BEFORE_EXPIRY.replace(year=2027)
    )
    problem = signature_problem(DECISION, KNOWN_FIELDS, signature, KNOWN_PUBLIC, BEFORE_EXPIRY)
    assert problem is not None and "another key" in problem


@pytest.mark.parametrize(
    ("value", "expires_at", "needle"),
    [
        ("not base64!", KNOWN_EXPIRES_AT, "not standard base64"),
        ("é" * 8, KNOWN_EXPIRES_AT, "not standard base64"),
        ("AAAA", KNOWN_EXPIRES_AT, "3 bytes, not the 64"),
        (KNOWN_SIGNATURE.value, "next tuesday", "not an ISO-8601 time"),
        (KNOWN_SIGNATURE.value, "2026-11-23T15:04:05", "no time zone"),
    ],
)
def test_a_malformed_signature_is_refused_with_its_reason(
    value: str, expires_at: str, needle: str
) -> None:
    signature = Signature(expires_at=expires_at, value=value)
    problem = signature_problem(DECISION, KNOWN_FIELDS, signature, KNOWN_PUBLIC, BEFORE_EXPIRY)
    assert problem is not None and needle in problem


def test_expires_at_accepts_z_and_offsets() -> None:
    assert parse_expires_at("2026-11-23T15:04:05Z") == datetime(2026, 11, 23, 15, 4, 5, tzinfo=UTC)
    assert parse_expires_at("2026-11-23T16:04:05+01:00") == datetime(
        2026, 11, 23, 15, 4, 5, tzinfo=UTC
    )


def test_only_ed25519_public_keys_parse() -> None:
    ecdsa = generate_private_key(SECP256R1()).public_key()
    line = ecdsa.public_bytes(Encoding.OpenSSH, PublicFormat.OpenSSH).decode()

    with pytest.raises(ValueError, match="only Ed25519 keys"):
        parse_public_key(line)
    with pytest.raises(ValueError, match="not an OpenSSH public key line"):
        parse_public_key("ssh-ed25519 garbage")
    assert parse_public_key(KNOWN_PUBLIC + " comment") is not None


def test_signed_bytes_refuses_a_bad_kind_or_a_second_expiry() -> None:
    with pytest.raises(ValueError, match="kind"):
        signed_bytes("decision-v1\nx", KNOWN_FIELDS, KNOWN_EXPIRES_AT)
    with pytest.raises(ValueError, match="expires_at"):
        signed_bytes(DECISION, {**KNOWN_FIELDS, "expires_at": "x"}, KNOWN_EXPIRES_AT)


def test_an_approve_payload_signs_its_own_fields_and_a_grant_keeps_them() -> None:
    decision = ApproveInput(
        call_id="toolu_01", approved=True, reason="ok", remember=True, approver="alice",
        input={"path": "a.md", "content": "é"},
    )  # fmt: skip
    expires = BEFORE_EXPIRY + timedelta(minutes=5)
    call = SignedCall("turn-9", "agent-9", "write_file", {"path": "a.md", "content": "A"}, "r9")
    signed = decision.signed_with(KNOWN_KEY, call, expires)
    assert signed.signature is not None

    grant = SignedGrant.of(signed, call, 3)

    assert grant is not None
    assert grant.signed_fields() == signed.signed_fields(call)
    assert grant.call_input_sha256 == input_digest({"path": "a.md", "content": "A"})
    assert grant.first_run_id == "r9"
    problem = signature_problem(
        DECISION, grant.signed_fields(), grant.signature, KNOWN_PUBLIC, BEFORE_EXPIRY
    )
    assert problem is None
    assert SignedGrant.of(decision, call, 3) is None  # unsigned
    # Through JSON, as Temporal carries it, the payload is the same.
    assert ApproveInput.model_validate_json(signed.model_dump_json()) == signed


def test_approvers_take_names_and_keyed_entries() -> None:
    agent = AgentSpec(
        id="a", model="demo:scripted",
        approvers=["bob", {"name": "alice", "public_key": KNOWN_PUBLIC + " alice@laptop"}],
    )  # fmt: skip

    assert agent.approver_names() == ["bob", "alice"]
    assert agent.approver_keys() == {"alice": KNOWN_PUBLIC + " alice@laptop"}
    assert AgentSpec(id="a", model="demo:x", approvers=["bob"]).approver_keys() == {}
    assert AgentSpec(id="a", model="demo:x").approver_names() is None


@pytest.mark.parametrize(
    ("approvers", "needle"),
    [
        ([{"name": "alice", "public_key": "ssh-ed25519 AAAA"}], "not an OpenSSH public key"),
        (["alice", {"name": "alice", "public_key": KNOWN_PUBLIC}], "repeated: ['alice']"),
        ([{"name": "alice", "key": KNOWN_PUBLIC}], "Extra inputs are not permitted"),
        ([{"public_key": KNOWN_PUBLIC}], "Field required"),
    ],
)
def test_bad_approvers_are_refused(approvers: list, needle: str) -> None:
    with pytest.raises(ValidationError, match="approvers") as failure:
        AgentSpec(id="a", model="demo:x", approvers=approvers)
    assert needle in str(failure.value)
