"""`TURNKEEPER_REQUIRE_ENCRYPTION` on the worker's side: it needs keys, and the start line says
whether it is on. What is refused, and how, is `workflows/inputs/plaintext.py`."""

from __future__ import annotations

from temporalio.client import Client

from turnkeeper.contracts.plaintext import REQUIRE_ENCRYPTION_ENV
from turnkeeper.payloads.encryption_codec import EncryptionCodec
from turnkeeper.payloads.keyring import ENCRYPTION_KEYS_ENV, EncryptionKeyError, Keyring
from turnkeeper.worker.settings import Settings


def encryption_of(client: Client) -> str:
    """What the worker does with payloads, as its start line says: `off`, `on` (encrypts what
    it writes, accepts what arrives unencrypted) or `required` (refuses what arrives so)."""
    codec = client.data_converter.payload_codec
    if not isinstance(codec, EncryptionCodec) or not codec.keyring.enabled:
        return "off"
    return "required" if codec.require_encryption else "on"


def check_required_encryption(settings: Settings, keyring: Keyring) -> None:
    """Raises EncryptionKeyError when encryption is required without keys: such a worker could
    neither encrypt nor read what it accepts."""
    if settings.require_encryption and not keyring.enabled:
        raise EncryptionKeyError(
            f"{REQUIRE_ENCRYPTION_ENV} is set but {ENCRYPTION_KEYS_ENV} is not: a worker that "
            f"requires encryption needs the keys; set {ENCRYPTION_KEYS_ENV} (`turnkeeper keys "
            f"new` prints an entry) or unset {REQUIRE_ENCRYPTION_ENV}"
        )
