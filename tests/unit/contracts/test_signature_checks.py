"""What a turn answers about a signature that is not the one a signer writes (the payload's
bounds, stray characters, a wrong length, another spelling of the same bytes, an expiry passed, a
key of another type, another kind of message), and the canonical JSON (RFC 8785) that a signer
in any language must write byte for byte. Pure functions, so no server is needed."""

from __future__ import annotations

import base64
import hashlib
import re
from datetime import UTC, datetime, timedelta

import pytest
from cryptography.hazmat.primitives.asymmetric.ec import SECP256R1, generate_private_key
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from pydantic import ValidationError
from turnkeeper.contracts.decision_signing import (
    BUDGET_EXTENSION,
    DECISION,
    LEGACY_SIGNING_VERSION,
    SIGNING_VERSION,
    Signature,
    canonical_json,
    decision_fields,
    input_digest,
    parse_public_key,
    public_key_line,
    sign,
    signature_problem,
    signed_bytes,
)

from tests.unit.contracts.decision_examples import UNSIGNED_DECISION

KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
PUBLIC = public_key_line(KEY)
EXPIRES = datetime(2026, 11, 23, 15, 4, 5, tzinfo=UTC)
BEFORE = EXPIRES - timedelta(seconds=1)
FIELDS = {**UNSIGNED_DECISION, "call_input_sha256": None, "first_run_id": "run-1"}
LEGACY_FIELDS = decision_fields(**UNSIGNED_DECISION, call_input_sha256=None, version=1)  # type: ignore[arg-type]
_BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def problem_with(
    value: str, version: int = SIGNING_VERSION, now: datetime | None = BEFORE
) -> str | None:
    fields = LEGACY_FIELDS if version == LEGACY_SIGNING_VERSION else FIELDS
    signature = Signature(expires_at="2026-11-23T15:04:05Z", value=value)
    return signature_problem(DECISION, fields, signature, PUBLIC, now, version)


@pytest.mark.parametrize(
    ("expires_at", "value", "field"),
    [("", "A", "expires_at"), ("x" * 65, "A", "expires_at"), ("x", "", "value"),
     ("x", "A" * 257, "value")],
)  # fmt: skip
def test_a_signature_payload_is_refused_when_a_part_is_empty_or_too_long(
    expires_at: str, value: str, field: str
) -> None:
    with pytest.raises(ValidationError, match=f"(?s)1 validation error.*\\n{field}\\n"):
        Signature(expires_at=expires_at, value=value)


def test_the_longest_parts_a_payload_may_carry_are_read() -> None:
    # ... and a turn then says what is wrong with them (test_one_character_parts_...).
    assert Signature(expires_at="x" * 64, value="A").expires_at == "x" * 64
    assert Signature(expires_at="x", value="A" * 256).value == "A" * 256


def test_one_character_parts_are_read_and_refused_with_their_reason() -> None:
    signature = Signature(expires_at="x", value="A")
    assert signature_problem(DECISION, FIELDS, signature, PUBLIC, BEFORE) == (
        "signature value is not standard base64"
    )
    valid = sign(KEY, DECISION, FIELDS, EXPIRES).value
    unusable = signature_problem(
        DECISION, FIELDS, Signature(expires_at="x", value=valid), PUBLIC, BEFORE
    )
    assert unusable is not None and "is not an ISO-8601 time" in unusable


@pytest.mark.parametrize("version", [SIGNING_VERSION, LEGACY_SIGNING_VERSION])
@pytest.mark.parametrize("stray", ["\n", " ", "!", "-", "_"])
def test_a_value_with_characters_outside_base64_is_refused_in_every_format(
    version: int, stray: str
) -> None:
    # A lenient decoder would skip the stray character and verify the rest.
    fields = LEGACY_FIELDS if version == LEGACY_SIGNING_VERSION else FIELDS
    value = sign(KEY, DECISION, fields, EXPIRES, version).value
    assert problem_with(value, version) is None

    assert problem_with(value[:20] + stray + value[20:], version) == (
        "signature value is not standard base64"
    )


@pytest.mark.parametrize("length", [1, 63, 65, 128])
def test_a_value_of_another_length_than_64_bytes_is_refused_with_its_length(length: int) -> None:
    value = base64.b64encode(bytes(length)).decode()
    assert problem_with(value) == f"signature value is {length} bytes, not the 64 of Ed25519"


def _spellings(last_byte: int) -> tuple[str, list[str]]:
    """The value an encoder writes for 63 zero bytes and `last_byte`, and the 15 others that
    decode to the same bytes (the 4 unused bits of the last character set otherwise)."""
    written = base64.b64encode(bytes(63) + bytes([last_byte])).decode()
    first = _BASE64.index(written[-3])
    others = [written[:-3] + _BASE64[first + bits] + "==" for bits in range(1, 16)]
    return written, others


@pytest.mark.parametrize("last_byte", [0x00, 0x01, 0x02, 0x03])
def test_every_other_spelling_of_the_same_bytes_is_refused(last_byte: int) -> None:
    # Whichever way a spelling sorts against the one an encoder writes: '0' sorts before 'w'.
    written, others = _spellings(last_byte)

    for other in others:
        assert base64.b64decode(other) == base64.b64decode(written)
        assert problem_with(other) == (
            "signature value is not canonical base64 (its unused bits must be zero)"
        ), other
    # The one an encoder writes gets as far as the check of the signature itself.
    assert "does not verify" in str(problem_with(written))


def test_a_signature_past_its_expiry_is_refused() -> None:
    value = sign(KEY, DECISION, FIELDS, EXPIRES).value

    for late in (timedelta(seconds=1), timedelta(days=400)):
        assert problem_with(value, now=EXPIRES + late) == (
            "signature expired at 2026-11-23T15:04:05Z"
        )
    assert problem_with(value, now=BEFORE) is None


def test_a_key_of_another_type_is_refused_with_the_type_it_has() -> None:
    ecdsa = generate_private_key(SECP256R1()).public_key()
    line = ecdsa.public_bytes(Encoding.OpenSSH, PublicFormat.OpenSSH).decode() + " alice@laptop"
    expected = (
        "is a ecdsa-sha2-nistp256 key; only Ed25519 keys sign decisions (ssh-keygen -t ed25519)"
    )

    with pytest.raises(ValueError, match=f"^{re.escape(expected)}$"):
        parse_public_key(line)


def test_a_signature_of_one_kind_is_refused_as_the_other() -> None:
    # Domain separation: the same fields signed as a budget extension do not make a decision.
    extension = sign(KEY, BUDGET_EXTENSION, FIELDS, EXPIRES)
    decision = sign(KEY, DECISION, FIELDS, EXPIRES)

    assert extension.value != decision.value
    assert signature_problem(BUDGET_EXTENSION, FIELDS, extension, PUBLIC, BEFORE) is None
    assert "not as turnkeeper-decision-v3" in str(
        signature_problem(DECISION, FIELDS, extension, PUBLIC, BEFORE)
    )
    assert "not as turnkeeper-budget-extension-v3" in str(
        signature_problem(BUDGET_EXTENSION, FIELDS, decision, PUBLIC, BEFORE)
    )


def test_format_1_signs_text_beyond_ascii_as_utf8_as_it_always_did() -> None:
    # Runs that began before format 2 verify format 1; its signers wrote UTF-8, not \\u escapes.
    fields = {**LEGACY_FIELDS, "reason": "ça va ✓"}

    signed = signed_bytes(DECISION, fields, "2026-11-23T15:04:05Z", LEGACY_SIGNING_VERSION)

    assert b'"reason":"\xc3\xa7a va \xe2\x9c\x93"' in signed


# RFC 8785, section 3.2.3: keys sorted by their UTF-16 code units, so U+1F600 (a surrogate pair,
# D83D DE00) comes before U+FB33; a sort by code point, Python's, puts it after.
RFC_SORTING = {
    "\u20ac": "Euro Sign",
    "\r": "Carriage Return",
    "\ufb33": "Hebrew Letter Dalet With Dagesh",
    "1": "One",
    "\U0001f600": "Emoji: Grinning Face",
    "\u0080": "Control",
    "\u00f6": "Latin Small Letter O With Diaeresis",
}
# RFC 8785, section 3.2.2: numbers as ECMAScript writes them, strings with only the escapes
# JSON requires (lower-case hex), the rest as UTF-8.
RFC_VALUES = {
    "numbers": [333333333.33333329, 1e30, 4.50, 2e-3, 0.000000000000000000000000001],
    "string": "\u20ac$\u000f\u000aA'\u0042\u0022\u005c\\\"/",
    "literals": [None, True, False],
}


def test_signed_json_is_rfc_8785_byte_for_byte() -> None:
    assert (
        canonical_json(RFC_SORTING)
        == (
            '{"\\r":"Carriage Return","1":"One","\u0080":"Control",'
            '"\u00f6":"Latin Small Letter O With Diaeresis","\u20ac":"Euro Sign",'
            '"\U0001f600":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}'
        ).encode()
    )
    expected_values = (
        '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],'
        '"string":"\u20ac$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}'
    ).encode()
    assert canonical_json(RFC_VALUES) == expected_values
    # What is signed: the context line, then the fields and the expiry in that same form.
    assert input_digest(RFC_VALUES) == hashlib.sha256(expected_values).hexdigest()
    # What is signed: the context line, then the fields and the expiry in that same form.
    assert signed_bytes(DECISION, RFC_VALUES, "2026-11-23T15:04:05Z", 2) == (
        b'turnkeeper-decision-v2\n{"expires_at":"2026-11-23T15:04:05Z",' + expected_values[1:]
    )
