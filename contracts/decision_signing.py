"""Signed decisions: what an approver's Ed25519 key signs, and how a turn checks it.

A turn whose `agent.approvers` lists public keys applies only decisions signed by one of them,
so that a process able to signal the namespace cannot approve in someone else's name. The
signature travels in the payload as `{"expires_at": "2026-11-23T15:04:05Z", "value": "<base64>"}`
and covers, byte for byte,

    b"turnkeeper-<kind>-v3\\n" + RFC 8785 (JCS) canonical JSON of {**fields, "expires_at": …}

where `kind` says what is being signed (`decision` for `approve` and `decide`), so that a
signature made for one kind of message can never be passed off as another, and the version
names the format. From format 3 the fields hold `first_run_id`, the run id of the turn's first
run (Temporal's `first_execution_run_id`, kept across continue-as-new), so that a signature made
for one turn is refused by a later turn started under the same workflow id. Format 2 (the same
without `first_run_id`) and format 1 (Python's `json.dumps`, a decision that binds no call input,
any base64 spelling) are verified only by turns whose history began before the next format:
their replays must take the path they took. Pure functions, no I/O and no clock (callers pass
`now`): a workflow runs them and replays them identically.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Mapping
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final

import rfc8785
from pydantic import ConfigDict, Field, JsonValue
from temporalio import workflow
from turnkeeper.contracts.contract_model import ContractModel

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )

# The kind of the `approve` signal and the `decide` update. A budget extension signs its own
# fields under its own kind, with the same Signature object, so that neither can pass for the other.
DECISION: Final = "decision"
BUDGET_EXTENSION: Final = "budget-extension"
SIGNATURE_BYTES: Final = 64
# The format a turn verifies (the `signing_version` of its status). 3: format 2 that binds the
# turn's first run. 2: RFC 8785 canonical JSON, a decision on one call binds that call's input,
# base64 only as an encoder writes it. 1: what turns verified before. Only runs whose history
# began before a format still verify the one before it.
SIGNING_VERSION: Final = 3
CANONICAL_SIGNING_VERSION: Final = 2
LEGACY_SIGNING_VERSION: Final = 1
SIGNING_VERSIONS: Final = (LEGACY_SIGNING_VERSION, CANONICAL_SIGNING_VERSION, SIGNING_VERSION)
EXPIRES_AT_FIELD: Final = "expires_at"
# From format 3: the run id of the turn's first run, which every signed kind binds.
FIRST_RUN_FIELD: Final = "first_run_id"
_KIND = re.compile(r"^[a-z][a-z0-9-]{0,62}$")
_EXAMPLE_TIME = "2026-11-23T15:04:05Z"


class Signature(ContractModel):
    """The `signature` field of a signed payload. Checked by the turn, not here, so that a
    malformed one is refused with a reason instead of making the whole payload unreadable."""

    model_config = ConfigDict(extra="forbid")
    expires_at: str = Field(min_length=1, max_length=64)
    """Until when the signature counts: an ISO-8601 UTC time, signed exactly as written."""
    value: str = Field(min_length=1, max_length=256)
    """The standard base64 of the 64-byte Ed25519 signature."""


def _cryptography() -> AbstractContextManager[None]:
    """Where `cryptography` is imported inside workflow code: passed through, since it is a native
    extension that cannot be loaded twice in one process. The sandbox cannot load it the first
    time either (its Rust module fails to initialise under the sandbox's import hooks with
    `SystemError: bad argument to internal function`), so a worker calls `load_cryptography()`
    before it runs any workflow, and these imports only take the loaded modules."""
    return workflow.unsafe.imports_passed_through()


def load_cryptography() -> None:
    """Loads, outside any workflow sandbox, every `cryptography` module that signed decisions use.

    Called by whatever builds a worker's sandbox (`turnkeeper.worker.wiring.workflow_runner`):
    a turn may name keyed approvers at any moment, and its first check runs inside the sandbox.
    Clients and the console need not call it: outside a sandbox the imports below just work.
    """
    import cryptography.exceptions
    import cryptography.hazmat.primitives.asymmetric.ed25519
    import cryptography.hazmat.primitives.serialization  # noqa: F401


def canonical_json(obj: Mapping[str, JsonValue], version: int = SIGNING_VERSION) -> bytes:
    """One byte string per value, whoever encodes it: RFC 8785 (JCS), which JavaScript's
    `JSON.stringify` with sorted keys and Go's JCS libraries write too. Format 1 used Python's
    own spelling (`5.0` for five), which no other language's encoder produces.

    Raises:
        ValueError: A value JCS cannot express (an integer beyond 2**53, NaN, a lone surrogate).
    """
    if version == LEGACY_SIGNING_VERSION:
        text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return text.encode("utf-8")
    return rfc8785.dumps(dict(obj))


def input_digest(call_input: Mapping[str, JsonValue]) -> str:
    """The SHA-256 (hex) of a tool call's input in canonical JSON. A decision on the call signs
    it, so that the decision cannot approve another input that comes under the same call id.

    Raises:
        ValueError: The input holds a value JCS cannot express.
    """
    return hashlib.sha256(canonical_json(call_input)).hexdigest()


def signed_bytes(
    kind: str, fields: Mapping[str, JsonValue], expires_at: str, version: int = SIGNING_VERSION
) -> bytes:
    """The exact bytes an approver signs for `fields` of `kind`, valid until `expires_at`.

    Raises:
        ValueError: A bad kind or version, `expires_at` among the fields, or a value the
            canonical form cannot express.
    """
    if not _KIND.match(kind):
        raise ValueError(f"signing kind {kind!r} must be lowercase letters, digits and '-'")
    if version not in SIGNING_VERSIONS:
        raise ValueError(f"no signing format version {version}")
    if EXPIRES_AT_FIELD in fields:
        raise ValueError(f"{EXPIRES_AT_FIELD!r} comes from the signature, not from the fields")
    _check_run_binding(fields, version)
    context = f"{signing_context(kind, version)}\n".encode()
    return context + canonical_json({**fields, EXPIRES_AT_FIELD: expires_at}, version)


def _check_run_binding(fields: Mapping[str, JsonValue], version: int) -> None:
    """Format 3 signs the turn's first run id, the formats before it never do: a mismatch is a
    defect of the caller, which must not sign (or verify) a signature that binds no run."""
    run_id = fields.get(FIRST_RUN_FIELD)
    if version >= SIGNING_VERSION and not (isinstance(run_id, str) and run_id):
        raise ValueError(
            f"format {version} binds the turn's first run: {FIRST_RUN_FIELD!r} is missing "
            "(the turn's status gives it)"
        )
    if version < SIGNING_VERSION and FIRST_RUN_FIELD in fields:
        raise ValueError(f"format {version} signs no {FIRST_RUN_FIELD!r}")


def bind_run(fields: dict[str, JsonValue], first_run_id: str | None) -> dict[str, JsonValue]:
    """`fields` bound to the turn's first run, when the turn's format binds it (`first_run_id`
    given: format 3); as they are otherwise."""
    if first_run_id is None:
        return fields
    return {**fields, FIRST_RUN_FIELD: first_run_id}


def signing_context(kind: str, version: int = SIGNING_VERSION) -> str:
    """The first line of the signed bytes, e.g. `turnkeeper-decision-v3`."""
    return f"turnkeeper-{kind}-v{version}"


def signed_digest(
    kind: str, fields: Mapping[str, JsonValue], expires_at: str, version: int = SIGNING_VERSION
) -> str:
    """The SHA-256 (hex) of what was signed: names a signed message however its signature is
    spelled, e.g. to remember that it was used."""
    return hashlib.sha256(signed_bytes(kind, fields, expires_at, version)).hexdigest()


def decision_fields(
    *,
    workflow_id: str,
    agent_id: str,
    call_id: str,
    tool: str,
    approved: bool,
    input: dict[str, JsonValue] | None,
    reason: str,
    remember: bool,
    approver: str,
    call_input_sha256: str | None,
    version: int = SIGNING_VERSION,
    first_run_id: str | None = None,
) -> dict[str, JsonValue]:
    """The signed fields of a decision. The workflow id and call id bind it to one call of one
    turn, so it cannot be replayed elsewhere; the digest of the call's input (`input_digest`;
    None for `*`) binds it to what the approver saw, which a call id alone cannot: a model may
    use an id again, and a workflow id may be used again by a later turn. The agent id and the
    tool (`*` for a decision on every waiting call) bind what a remembered approval may be
    stored for; the rest binds what was decided. Format 1 had no input digest; from format 3 the
    turn's first run id binds the decision to one turn of the workflow id."""
    fields: dict[str, JsonValue] = {
        "workflow_id": workflow_id,
        "agent_id": agent_id,
        "call_id": call_id,
        "tool": tool,
        "approved": approved,
        "input": input,
        "reason": reason,
        "remember": remember,
        "approver": approver,
    }
    if version != LEGACY_SIGNING_VERSION:
        fields["call_input_sha256"] = call_input_sha256
    if version >= SIGNING_VERSION:
        fields[FIRST_RUN_FIELD] = first_run_id
    return fields


def parse_public_key(line: str) -> Ed25519PublicKey:
    """An OpenSSH public key line (`ssh-ed25519 AAAA… comment`) as a key.

    Raises:
        ValueError: The line is not an OpenSSH public key, or the key is not Ed25519.
    """
    with _cryptography():
        from cryptography.exceptions import UnsupportedAlgorithm
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
        from cryptography.hazmat.primitives.serialization import load_ssh_public_key
    try:
        key = load_ssh_public_key(line.strip().encode("utf-8"))
    except (ValueError, UnsupportedAlgorithm) as err:
        raise ValueError(f"not an OpenSSH public key line ('ssh-ed25519 AAAA…'): {err}") from None
    if not isinstance(key, Ed25519PublicKey):
        raise ValueError(
            f"is a {line.split()[0]} key; only Ed25519 keys sign decisions (ssh-keygen -t ed25519)"
        )
    return key


def public_key_line(key: Ed25519PrivateKey | Ed25519PublicKey) -> str:
    """The `ssh-ed25519 AAAA…` line of a key, as `agent.approvers` lists it."""
    with _cryptography():
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
        from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
    public = key.public_key() if isinstance(key, Ed25519PrivateKey) else key
    return public.public_bytes(Encoding.OpenSSH, PublicFormat.OpenSSH).decode("ascii")


def format_expires_at(moment: datetime) -> str:
    """`moment` as the signature writes it: UTC, whole seconds, `Z`."""
    if moment.tzinfo is None:
        raise ValueError("an expiry needs a time zone")
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_expires_at(text: str) -> datetime:
    """The moment a signature's `expires_at` names.

    Raises:
        ValueError: Not an ISO-8601 time with a time zone.
    """
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"expires_at {text!r} is not an ISO-8601 time like {_EXAMPLE_TIME}"
        ) from None
    if moment.tzinfo is None:
        raise ValueError(
            f"expires_at {text!r} has no time zone; write it in UTC, like {_EXAMPLE_TIME}"
        )
    return moment


def sign(
    private_key: Ed25519PrivateKey,
    kind: str,
    fields: Mapping[str, JsonValue],
    expires: datetime,
    version: int = SIGNING_VERSION,
) -> Signature:
    """Signs `fields` of `kind` until `expires`: the payload's `signature` field."""
    expires_at = format_expires_at(expires)
    value = private_key.sign(signed_bytes(kind, fields, expires_at, version))
    return Signature(expires_at=expires_at, value=base64.b64encode(value).decode("ascii"))


def signature_problem(
    kind: str,
    fields: Mapping[str, JsonValue],
    signature: Signature,
    public_key: str,
    now: datetime | None,
    version: int = SIGNING_VERSION,
) -> str | None:
    """Why `signature` does not prove that the holder of `public_key` signed `fields` of `kind`
    in format `version` (and, given `now`, that it has not expired), or None when it does."""
    with _cryptography():
        from cryptography.exceptions import InvalidSignature
    raw, problem = _signature_bytes(signature.value, version)
    if problem:
        return problem
    try:
        expires = parse_expires_at(signature.expires_at)
        signed = signed_bytes(kind, fields, signature.expires_at, version)
        parse_public_key(public_key).verify(raw, signed)
    except ValueError as err:
        return f"signature is unusable: {err}"
    except InvalidSignature:
        return (
            "signature does not verify: it was made with another key, or for another "
            f"call, turn, run or decision than this one, or not as "
            f"{signing_context(kind, version)}"
        )
    if now is not None and now >= expires:
        return f"signature expired at {signature.expires_at}"
    return None


def _signature_bytes(value: str, version: int) -> tuple[bytes, str | None]:
    """The 64 bytes `value` encodes, or the problem with it. The decoder ignores the unused low
    bits of the last character, so 16 spellings give one signature: format 2 takes only the
    one an encoder writes, so that a copy of a used signature cannot pass for a new one."""
    try:
        raw = base64.b64decode(value, validate=True)
    except ValueError:  # binascii.Error, or characters outside ASCII
        return b"", "signature value is not standard base64"
    if len(raw) != SIGNATURE_BYTES:
        return raw, f"signature value is {len(raw)} bytes, not the {SIGNATURE_BYTES} of Ed25519"
    if version != LEGACY_SIGNING_VERSION and base64.b64encode(raw).decode("ascii") != value:
        return raw, "signature value is not canonical base64 (its unused bits must be zero)"
    return raw, None
