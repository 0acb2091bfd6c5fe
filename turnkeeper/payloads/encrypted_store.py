"""A content store that keeps only ciphertext: conversation nodes and external-storage blobs alike.

Each object is `TKE1 | len(key id) | key id | nonce | AES-256-GCM ciphertext`, the header bound
as associated data. The nonce is derived from the plaintext, so the same content still encrypts
to the same bytes and lands at the same address: retried and replayed activities stay idempotent,
as they are on a plaintext store. Addresses are digests of the ciphertext, so the references
in workflow history say nothing about the content either.

Objects written before encryption was turned on have no header and are read as they are; every
object read, old or new, must match the digest its reference names, so one swapped in behind a
reference is refused rather than fed to a model.
"""

from __future__ import annotations

import hashlib
from typing import Final

from turnkeeper.payloads.content_store import ContentMissingError, ContentStore, hex_digest
from turnkeeper.payloads.keyring import Keyring

_MAGIC: Final = b"TKE1"


class ContentCorruptedError(ContentMissingError):
    """The object under a reference is not the one that reference names."""


class EncryptedStore:
    """Encrypts with the keyring's first key on put; decrypts with any of its keys on get."""

    def __init__(self, inner: ContentStore, keyring: Keyring) -> None:
        if not keyring.enabled:
            raise ValueError("an EncryptedStore needs at least one key")
        self.inner = inner
        self._keyring = keyring

    def __repr__(self) -> str:
        return f"EncryptedStore({self.inner!r}, {self._keyring!r})"

    async def put(self, data: bytes) -> str:
        key_id = self._keyring.encrypting_key_id.encode()
        header = _MAGIC + bytes([len(key_id)]) + key_id
        sealed = self._keyring.encrypt(data, header, deterministic=True)
        return await self.inner.put(header + sealed)

    async def get(self, ref: str) -> bytes:
        stored = await self.inner.get(ref)
        if hashlib.sha256(stored).hexdigest() != hex_digest(ref):
            raise ContentCorruptedError(
                f"content {ref} in the store does not match its address: altered or corrupted"
            )
        if not stored.startswith(_MAGIC):
            return stored
        id_length = stored[len(_MAGIC)]
        header_length = len(_MAGIC) + 1 + id_length
        key_id = stored[len(_MAGIC) + 1 : header_length].decode(errors="replace")
        return self._keyring.decrypt(key_id, stored[header_length:], stored[:header_length])

    async def aclose(self) -> None:
        await self.inner.aclose()


def encrypting(store: ContentStore, keyring: Keyring) -> ContentStore:
    """`store` itself when the keyring is empty (encryption off), else an `EncryptedStore`."""
    return EncryptedStore(store, keyring) if keyring.enabled else store
