"""The token file of `turnkeeper serve`: which bearer tokens sign in as which identity.

The file holds, per identity, only the SHA-256 of its token, its role and tenant, and optionally
the path of the identity's SSH signing key. A plain hash and not a password hash (bcrypt,
scrypt): the tokens are 256 random bits, not something a person chose, so no dictionary or
brute force can reverse the hash, and one SHA-256 per request keeps sign-in cheap. A stolen file
grants nothing.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Final, Literal, get_args

from turnkeeper.contracts.tenants import tenant_problem

# 32 bytes = 256 bits of randomness; urlsafe so it fits a header and a shell line unquoted.
TOKEN_BYTES: Final = 32
TOKEN_PREFIX: Final = "tk_"

# What an identity may do beyond its own turns (docs/http-api.md, Who may do what): an operator
# starts turns for any tenant at any price, sees every turn and manages tenants; a member's
# turns are billed to its tenant. An identity of an older file, without a role, is a member.
Role = Literal["operator", "member"]
OPERATOR: Final = "operator"
MEMBER: Final = "member"
ROLES: Final = get_args(Role)


class TokenFileError(Exception):
    """The token file cannot be read or written, or a name is missing or taken (the message
    says which file and what to do)."""


@dataclass(frozen=True)
class Identity:
    """Who a token signs in as.

    Attributes:
        name: The identity: the approver name of its decisions.
        token_sha256: Hex SHA-256 of the token; the token itself is never stored.
        key_file: Path of the identity's OpenSSH Ed25519 private key; the server signs its
            decisions with it (for agents whose approvers have public keys).
        created: When the token was made (ISO-8601, UTC).
        role: `operator` or `member`.
        tenant: The tenant a member's turns are billed to; None: the member starts turns
            without a tenant only (an operator's tenant is unused).
    """

    name: str
    token_sha256: str
    key_file: str | None = None
    created: str = ""
    role: Role = MEMBER
    tenant: str | None = None

    @property
    def is_operator(self) -> bool:
        return self.role == OPERATOR


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class TokenStore:
    """The identities of one token file; every change is written back at once."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._stamp = self._mtime()
        self._identities = self._read()

    def _mtime(self) -> float | None:
        try:
            return self.path.stat().st_mtime
        except OSError:
            return None

    def _refresh(self) -> None:
        # A running server sees `tokens add|revoke` from another process without a restart.
        stamp = self._mtime()
        if stamp != self._stamp:
            self._stamp, self._identities = stamp, self._read()

    def _read(self) -> dict[str, Identity]:
        if not self.path.exists():
            return {}
        try:
            raw = json.loads(self.path.read_text())
            identities = {entry["name"]: Identity(**entry) for entry in raw["identities"]}
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise TokenFileError(f"{self.path} is not a token file of turnkeeper: {err}") from None
        for identity in identities.values():
            # A hand-edited role or tenant must not sign in with rights nobody gave it.
            problem = _grant_problem(identity.role, identity.tenant)
            if problem:
                raise TokenFileError(f"{self.path}: identity {identity.name!r}: {problem}")
        return identities

    def _write(self) -> None:
        data = {"identities": [asdict(identity) for identity in self._identities.values()]}
        try:
            # Created readable by its owner only: it names who may approve what.
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as file:
                json.dump(data, file, indent=2)
            self._stamp = self._mtime()
        except OSError as err:
            raise TokenFileError(f"cannot write {self.path}: {err.strerror}") from None

    def identities(self) -> list[Identity]:
        return sorted(self._identities.values(), key=lambda identity: identity.name)

    def add(
        self,
        name: str,
        key_file: Path | None = None,
        *,
        role: str = MEMBER,
        tenant: str | None = None,
    ) -> str:
        """A new token for `name` (replacing its old one) with `role` and `tenant`; returns the
        token, the only time it exists outside the caller's hands.

        Raises:
            TokenFileError: An empty name, a key file that does not exist, a role that is not
                one, or a tenant that is not a tenant name.
        """
        problem = name_problem(name)
        if problem:
            raise TokenFileError(problem)
        problem = _grant_problem(role, tenant)
        if problem:
            raise TokenFileError(problem)
        if key_file is not None and not key_file.is_file():
            raise TokenFileError(f"--key: no file {key_file}")
        token = TOKEN_PREFIX + secrets.token_urlsafe(TOKEN_BYTES)
        self._identities[name] = Identity(
            name=name,
            token_sha256=token_hash(token),
            key_file=str(key_file.resolve()) if key_file else None,
            created=datetime.now(UTC).isoformat(timespec="seconds"),
            role=OPERATOR if role == OPERATOR else MEMBER,
            tenant=tenant,
        )
        self._write()
        return token

    def revoke(self, name: str) -> None:
        """Removes `name`'s token; it signs in no more.

        Raises:
            TokenFileError: No identity of that name.
        """
        if self._identities.pop(name, None) is None:
            known = ", ".join(self._identities) or "none"
            raise TokenFileError(f"no identity {name!r} in {self.path} (identities: {known})")
        self._write()

    def identify(self, token: str) -> Identity | None:
        """The identity `token` signs in as, or None."""
        self._refresh()
        digest = token_hash(token)
        for identity in self._identities.values():
            # Constant time: how much of a hash matched must not leak through timing.
            if hmac.compare_digest(identity.token_sha256, digest):
                return identity
        return None


def name_problem(name: str) -> str | None:
    """Why `name` cannot be an identity's name, or None."""
    if not name.strip():
        return "an identity needs a name"
    # A name goes into visibility queries (`StartedBy = '<name>'`), logs and terminals.
    if any(char in name for char in "'\"\\") or not name.isprintable():
        return f"{name!r}: a name has no quotes, backslashes or control characters"
    return None


def _grant_problem(role: str, tenant: str | None) -> str | None:
    """Why `role` and `tenant` cannot be an identity's, or None."""
    if role not in ROLES:
        return f"--role: {role!r} is not a role (one of: {', '.join(ROLES)})"
    if tenant is not None:
        problem = tenant_problem(tenant)
        if problem:
            return f"--tenant: {problem}"
    return None
