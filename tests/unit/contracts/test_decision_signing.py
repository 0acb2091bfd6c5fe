"""The signed-decision format, byte for byte, and the checks a turn runs on a signature: pure
functions, so no server is needed. Format 2's known answers, for other languages too, are in
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
KNOWN_FIELDS = decision_fields(**UNSIGNED_DECISION, call_input_sha256=input_digest(KNOWN_INPUT))
LEGACY_FIELDS = decision_fields(
    **UNSIGNED_DECISION, call_input_sha256=None, version=LEGACY_SIGNING_VERSION
)
BEFORE_EXPIRY = datetime(2026, 11, 23, 15, 4, 4, tzinfo=UTC)
KNOWN_SIGNATURE = sign(KNOWN_KEY, DECISION, KNOWN_FIELDS, BEFORE_EXPIRY + timedelta(seconds=1))
_BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def test_signed_bytes_are_the_documented_context_and_canonical_json() -> None:
    expected = (
        b"turnkeeper-decision-v2\n"
        b'{"agent_id":"research-assistant","approved":true,"approver":"alice",'
        b'"call_id":"toolu_01","call_input_sha256":"' + input_digest(KNOWN_INPUT).encode() + b'",'
        b'"expires_at":"2026-11-23T15:04:05Z","input":null,'
        b'"reason":"looks fine","remember":false,"tool":"write_file","workflow_id":"turn-1"}'
    )
    assert signed_bytes(DECISION, KNOWN_FIELDS, KNOWN_EXPIRES_AT) == expected


def test_the_input_digest_is_the_sha256_of_the_jcs_of_the_input() -> None:
    # JCS: keys sorted, no spaces, numbers as JavaScript writes them (1.0 is 1), UTF-8.
    assert input_digest({"b": 1.0, "a": "é"}) == input_digest({"a": "é", "b": 1})
    canonical = b'{"content":"# Summary\\n","path":"summary.md"}'
    assert input_digest(KNOWN_INPUT) == hashlib.sha256(canonical).hexdigest()


def test_numbers_are_signed_as_javascript_and_go_write_them() -> None:
    # The reason for format 2: Python wrote 5.0, which no JavaScript or Go signer produces.
    extension = ExtendBudgetInput(cost_usd=5, approver="alice")
    fields = extension.signed_fields("turn-1", "research-assistant", 1)

    signed = signed_bytes(BUDGET_EXTENSION, fields, KNOWN_EXPIRES_AT)

    assert signed.startswith(b"turnkeeper-budget-extension-v2\n")
    assert b'"cost_usd":5,' in signed
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
    assert "not as turnkeeper-decision-v2" in str(
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
    call = SignedCall("turn-9", "agent-9", "write_file", {"path": "a.md", "content": "A"})
    signed = decision.signed_with(KNOWN_KEY, call, expires)
    assert signed.signature is not None

    grant = SignedGrant.of(signed, call, 2)

    assert grant is not None
    assert grant.signed_fields() == signed.signed_fields(call)
    assert grant.call_input_sha256 == input_digest({"path": "a.md", "content": "A"})
    problem = signature_problem(
        DECISION, grant.signed_fields(), grant.signature, KNOWN_PUBLIC, BEFORE_EXPIRY
    )
    assert problem is None
    assert SignedGrant.of(decision, call, 2) is None  # unsigned
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
