"""The payload codec that encrypts everything a turn sends to the Temporal server.

Workflow input and result, activity inputs and results, signals, updates, queries, failure
details, user metadata (summaries, current details) and the continue-as-new carry are all
payloads, and every payload passes through the data converter's codec: with keys set, the server
keeps `encoding: binary/encrypted` payloads whose `data` is `nonce + AES-256-GCM ciphertext` of
the serialized original payload, under the key named by `encryption-key-id` (the metadata of
Temporal's encryption sample, so its tools read ours).

Without keys the codec passes payloads through but still recognises encrypted ones, so a client
that lacks the keys says so in one line instead of failing to parse ciphertext as JSON.

A worker that requires encryption (`TURNKEEPER_REQUIRE_ENCRYPTION`) decodes with
`require_encryption=True`: every payload that arrives unencrypted is marked
(`contracts/plaintext.py`) for the workflow to refuse.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final

from temporalio.api.common.v1 import Payload
from temporalio.converter import PayloadCodec

from turnkeeper.contracts.plaintext import marked, unmarked
from turnkeeper.payloads.keyring import Keyring, UnreadableContentError

ENCODING: Final = b"binary/encrypted"
KEY_ID_METADATA: Final = "encryption-key-id"
# The claim-check mark (`payload_storage`) must stay readable outside the ciphertext: the storage
# selector runs after the codec. Its value is a constant, so it says nothing about the content.
_CLEAR_METADATA: Final = ("turnkeeper-claim-check",)
# No associated data, as in Temporal's sample: its decoders then read our payloads too. The key id
# needs no binding: under another key's id the ciphertext fails authentication.
_NO_AAD: Final = b""

MissingKeyHook = Callable[[UnreadableContentError], None]


class EncryptionCodec(PayloadCodec):
    """AES-256-GCM over whole payloads with the keyring's first key; any of its keys decrypts.

    Args:
        keyring: The deployment's keys; empty: encode passes through.
        on_missing_key: Called before an `UnreadableContentError` is raised (a key id the keyring
            lacks, or a key of that id that does not open it). A worker uses it to stop: a worker
            without the keys of its turns would fail every task it takes, again and again.
        require_encryption: Mark each payload that `decode` meets unencrypted.
    """

    def __init__(
        self,
        keyring: Keyring,
        on_missing_key: MissingKeyHook | None = None,
        *,
        require_encryption: bool = False,
    ) -> None:
        self.keyring = keyring
        self.on_missing_key = on_missing_key
        self.require_encryption = require_encryption

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        if not self.keyring.enabled:
            return list(payloads)
        return [self.encrypt(payload) for payload in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        if not self.require_encryption:
            return [self.decrypt(payload) for payload in payloads]
        return [
            self.decrypt(p) if p.metadata.get("encoding") == ENCODING else marked(p)
            for p in payloads
        ]

    def encrypt(self, payload: Payload) -> Payload:
        key_id = self.keyring.encrypting_key_id
        # A plaintext request the workflow accepted (one that began before encryption was
        # required) travels on, at continue-as-new, encrypted: it is no longer plaintext.
        payload = unmarked(payload)
        metadata = {"encoding": ENCODING, KEY_ID_METADATA: key_id.encode()}
        for name in _CLEAR_METADATA:
            if name in payload.metadata:
                metadata[name] = payload.metadata[name]
        sealed = self.keyring.encrypt(payload.SerializeToString(), _NO_AAD)
        encrypted = Payload(metadata=metadata, data=sealed)
        # The sizes of externally stored payloads are what the Web UI shows next to a reference.
        encrypted.external_payloads.extend(payload.external_payloads)
        return encrypted

    def decrypt(self, payload: Payload) -> Payload:
        if payload.metadata.get("encoding") != ENCODING:
            return payload  # written before encryption was on, or a storage reference
        key_id = payload.metadata.get(KEY_ID_METADATA, b"").decode(errors="replace")
        try:
            return Payload.FromString(self.keyring.decrypt(key_id, payload.data, _NO_AAD))
        except UnreadableContentError as err:
            if self.on_missing_key is not None:
                self.on_missing_key(err)
            raise
