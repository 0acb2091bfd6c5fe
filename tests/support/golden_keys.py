"""The key of the encrypted golden histories: a test fixture, published on purpose, protecting
nothing. Replaying those histories needs it, and the store objects under `tests/histories/store`
that their external-storage references name."""

from pathlib import Path
from typing import Final

from temporalio.converter import DataConverter

from turnkeeper.payloads.content_store import ContentStore, LocalFolderStore
from turnkeeper.payloads.encrypted_store import encrypting
from turnkeeper.payloads.keyring import Keyring
from turnkeeper.payloads.payload_storage import turn_data_converter

GOLDEN_KEYS: Final = "golden-2026:Z29sZGVuIGhpc3RvcmllcyBrZXksIHRlc3RzIG9ubHk="
GOLDEN_STORE: Final = Path(__file__).parent.parent / "histories" / "store"


def golden_store(folder: Path = GOLDEN_STORE) -> ContentStore:
    return encrypting(LocalFolderStore(folder), Keyring.parse(GOLDEN_KEYS))


def golden_converter(
    folder: Path = GOLDEN_STORE, *, require_encryption: bool = False
) -> DataConverter:
    """Decodes every golden history: plaintext ones pass through, encrypted ones decrypt. A
    replay encodes the commands it makes again, and large ones are stored: replays pass a copy
    of the golden store as `folder`, so that they never add objects to the committed one.
    `require_encryption`: as a worker that requires it (plaintext payloads are marked)."""
    return turn_data_converter(
        golden_store(folder), Keyring.parse(GOLDEN_KEYS), require_encryption=require_encryption
    )
