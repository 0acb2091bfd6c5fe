"""The deployment's encryption keys: `TURNKEEPER_ENCRYPTION_KEYS="k2:<base64>,k1:<base64>"`.

The first key encrypts; every key listed decrypts, so a key is rotated by putting a new one first
and keeping the old ones for as long as turns written with them may be read (running, parked and
finished turns within the namespace retention, and their content-store objects).

AES-256-GCM from `cryptography`, as Temporal's encryption sample uses. Key bytes never appear in a
repr, a log line or an error message: only key ids do.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import re
from collections.abc import Mapping
from typing import Final

# `cryptography` (6 MiB resident) is imported where a key is first used, not here: most workers
# run without encryption and should not hold it.

ENCRYPTION_KEYS_ENV: Final = "TURNKEEPER_ENCRYPTION_KEYS"
KEY_BYTES: Final = 32
NONCE_BYTES: Final = 12
_KEY_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class EncryptionKeyError(ValueError):
    """`TURNKEEPER_ENCRYPTION_KEYS` cannot be used; the message names the variable, never a key."""


class UnreadableContentError(Exception):
    """Encrypted content that this process's keys cannot open; `key_id` names the key it needs."""

    key_id: str


class MissingEncryptionKeyError(UnreadableContentError):
    """Content was encrypted with a key this process does not have."""

    def __init__(self, key_id: str, known: tuple[str, ...]) -> None:
        have = f"it has {', '.join(known)}" if known else "it is not set"
        super().__init__(
            f"content is encrypted with key {key_id!r}, which {ENCRYPTION_KEYS_ENV} does not "
            f"list here ({have}); add that key to {ENCRYPTION_KEYS_ENV}"
        )
        self.key_id = key_id


class UndecryptableContentError(UnreadableContentError):
    """Content under a known key id fails authentication: the wrong key, or tampered bytes."""

    def __init__(self, key_id: str) -> None:
        super().__init__(
            f"content encrypted with key {key_id!r} does not decrypt with the key of that id in "
            f"{ENCRYPTION_KEYS_ENV}: the key is not the one it was written with, or the content "
            "was altered"
        )
        self.key_id = key_id


class _Key:
    __slots__ = ("aead", "key_id", "nonce_key")

    def __init__(self, key_id: str, secret: bytes) -> None:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        self.key_id = key_id
        self.aead = AESGCM(secret)
        # A second key for deterministic nonces, derived so that the AES key is used for one
        # purpose only.
        self.nonce_key = hmac.digest(secret, b"turnkeeper content nonce v1", hashlib.sha256)


class Keyring:
    """The keys of `TURNKEEPER_ENCRYPTION_KEYS`; empty means encryption is off."""

    def __init__(self, keys: Mapping[str, bytes] | None = None) -> None:
        self._keys = {key_id: _Key(key_id, secret) for key_id, secret in (keys or {}).items()}
        self._first = next(iter(self._keys.values()), None)

    def __repr__(self) -> str:
        return f"Keyring(ids={list(self._keys)})"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Keyring:
        """The keyring of `env` (default: the process environment).

        Raises:
            EncryptionKeyError: The variable is malformed (the message says how, without a key).
        """
        source = os.environ if env is None else env
        return cls.parse(source.get(ENCRYPTION_KEYS_ENV, ""))

    @classmethod
    def parse(cls, text: str) -> Keyring:
        keys: dict[str, bytes] = {}
        for position, entry in enumerate(filter(None, (e.strip() for e in text.split(","))), 1):
            key_id, sep, encoded = entry.partition(":")
            where = f"{ENCRYPTION_KEYS_ENV}, entry {position}"
            if not sep or not _KEY_ID.fullmatch(key_id):
                raise EncryptionKeyError(
                    f"{where}: expected id:<base64 of 32 bytes>, the id made of letters, digits, "
                    "'.', '_' or '-' (run `turnkeeper keys new` for a fresh entry)"
                )
            if key_id in keys:
                raise EncryptionKeyError(f"{where}: key id {key_id!r} is listed twice")
            keys[key_id] = _secret(encoded.strip(), f"{where} ({key_id!r})")
        return cls(keys)

    @property
    def enabled(self) -> bool:
        return self._first is not None

    @property
    def key_ids(self) -> tuple[str, ...]:
        return tuple(self._keys)

    @property
    def encrypting_key_id(self) -> str:
        if self._first is None:
            raise EncryptionKeyError(f"{ENCRYPTION_KEYS_ENV} is not set: nothing encrypts")
        return self._first.key_id

    def encrypt(self, plaintext: bytes, aad: bytes, *, deterministic: bool = False) -> bytes:
        """`nonce + ciphertext` under the first key. A deterministic nonce (an HMAC of the
        plaintext) makes equal plaintexts encrypt equally, which content addressing needs; it
        reveals only that two objects are equal, which their addresses reveal anyway."""
        if self._first is None:
            raise EncryptionKeyError(f"{ENCRYPTION_KEYS_ENV} is not set: nothing encrypts")
        key = self._first
        if deterministic:
            nonce = hmac.digest(key.nonce_key, aad + plaintext, hashlib.sha256)[:NONCE_BYTES]
        else:
            nonce = os.urandom(NONCE_BYTES)
        return nonce + key.aead.encrypt(nonce, plaintext, aad)

    def decrypt(self, key_id: str, sealed: bytes, aad: bytes) -> bytes:
        """Raises `MissingEncryptionKeyError` or `UndecryptableContentError`."""
        from cryptography.exceptions import InvalidTag

        key = self._keys.get(key_id)
        if key is None:
            raise MissingEncryptionKeyError(key_id, self.key_ids)
        try:
            return key.aead.decrypt(sealed[:NONCE_BYTES], sealed[NONCE_BYTES:], aad)
        except InvalidTag:
            raise UndecryptableContentError(key_id) from None


def new_key_entry(key_id: str) -> str:
    """A fresh `id:<base64 32 bytes>` entry for `TURNKEEPER_ENCRYPTION_KEYS`."""
    if not _KEY_ID.fullmatch(key_id):
        raise EncryptionKeyError(
            f"key id {key_id!r}: use letters, digits, '.', '_' or '-' (at most 64)"
        )
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    return f"{key_id}:{base64.b64encode(AESGCM.generate_key(bit_length=256)).decode()}"


def _secret(encoded: str, where: str) -> bytes:
    try:
        secret = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise EncryptionKeyError(f"{where}: the key is not valid base64") from None
    if len(secret) != KEY_BYTES:
        raise EncryptionKeyError(
            f"{where}: the key is {len(secret)} bytes, AES-256 needs {KEY_BYTES}"
        )
    return secret
