"""The parts of encryption on their own: the keyring and its variable, the payload codec and the
encrypting content store, each fed wrong input too."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from temporalio.api.common.v1 import Payload
from typer.testing import CliRunner

from tests.support.console_runs import restore_logging  # noqa: F401 (autouse fixture)
from turnkeeper.console.cli import app
from turnkeeper.payloads.content_store import LocalFolderStore, hex_digest
from turnkeeper.payloads.encrypted_store import ContentCorruptedError, EncryptedStore
from turnkeeper.payloads.encryption_codec import EncryptionCodec
from turnkeeper.payloads.keyring import (
    EncryptionKeyError,
    Keyring,
    MissingEncryptionKeyError,
    UndecryptableContentError,
    new_key_entry,
)

K1 = new_key_entry("k1")
K2 = new_key_entry("k2")
SECRET_B64 = K1.partition(":")[2]


@pytest.mark.parametrize(
    ("value", "complaint"),
    [
        ("k1", "expected id:<base64"),
        (":" + SECRET_B64, "expected id:<base64"),
        ("bad id:" + SECRET_B64, "expected id:<base64"),
        ("k1:not base64!", "not valid base64"),
        ("k1:" + base64.b64encode(b"short").decode(), "5 bytes, AES-256 needs 32"),
        (f"{K1},{K1}", "listed twice"),
    ],
    # Named, not drawn from the values: the keys are new each run, and parallel test processes
    # must collect the same test ids.
    ids=["no secret", "no id", "bad id", "not base64", "short key", "listed twice"],
)
def test_a_malformed_variable_names_the_entry_and_never_a_key(value: str, complaint: str) -> None:
    with pytest.raises(EncryptionKeyError, match="TURNKEEPER_ENCRYPTION_KEYS") as error:
        Keyring.parse(value)
    assert complaint in str(error.value)
    assert SECRET_B64 not in str(error.value)


def test_the_first_key_encrypts_and_every_key_decrypts() -> None:
    keyring = Keyring.parse(f" {K2} , {K1} ,")
    assert keyring.key_ids == ("k2", "k1") and keyring.encrypting_key_id == "k2"
    assert SECRET_B64 not in repr(keyring)
    assert not Keyring.parse("").enabled and not Keyring.from_env({}).enabled


async def test_the_codec_round_trips_and_keeps_the_claim_check_mark() -> None:
    codec = EncryptionCodec(Keyring.parse(K1))
    plain = Payload(
        metadata={"encoding": b"json/plain", "turnkeeper-claim-check": b"1"}, data=b'"secret"'
    )
    [sealed] = await codec.encode([plain])
    assert sealed.metadata["encoding"] == b"binary/encrypted"
    assert sealed.metadata["turnkeeper-claim-check"] == b"1"
    assert b"secret" not in sealed.SerializeToString()
    assert await codec.decode([sealed]) == [plain]


async def test_without_keys_the_codec_passes_plaintext_and_names_the_missing_key() -> None:
    plain = Payload(metadata={"encoding": b"json/plain"}, data=b"1")
    unkeyed = EncryptionCodec(Keyring())
    assert await unkeyed.encode([plain]) == [plain]
    assert await unkeyed.decode([plain]) == [plain]
    [sealed] = await EncryptionCodec(Keyring.parse(K1)).encode([plain])
    seen: list[str] = []
    hooked = EncryptionCodec(Keyring(), on_missing_key=lambda error: seen.append(error.key_id))
    with pytest.raises(MissingEncryptionKeyError, match=r"key 'k1'.*it is not set"):
        await hooked.decode([sealed])
    assert seen == ["k1"]


async def test_a_same_named_wrong_key_or_altered_bytes_fail_authentication() -> None:
    [sealed] = await EncryptionCodec(Keyring.parse(K1)).encode(
        [Payload(metadata={"encoding": b"json/plain"}, data=b"1")]
    )
    impostor = EncryptionCodec(Keyring.parse("k1:" + K2.partition(":")[2]))
    with pytest.raises(UndecryptableContentError, match="key 'k1'"):
        await impostor.decode([sealed])
    sealed.data = sealed.data[:-1] + bytes([sealed.data[-1] ^ 1])
    with pytest.raises(UndecryptableContentError):
        await EncryptionCodec(Keyring.parse(K1)).decode([sealed])


async def test_the_store_keeps_ciphertext_at_stable_addresses(tmp_path: Path) -> None:
    inner = LocalFolderStore(tmp_path)
    store = EncryptedStore(inner, Keyring.parse(K1))
    ref = await store.put(b"the lighthouse ledger")
    assert await store.put(b"the lighthouse ledger") == ref  # idempotent, as content addressing
    assert b"lighthouse" not in await inner.get(ref)
    assert await store.get(ref) == b"the lighthouse ledger"
    # After a rotation the old object still reads; new ones use the new key.
    rotated = EncryptedStore(inner, Keyring.parse(f"{K2},{K1}"))
    assert await rotated.get(ref) == b"the lighthouse ledger"
    assert await rotated.put(b"the lighthouse ledger") != ref
    with pytest.raises(MissingEncryptionKeyError, match="key 'k1'"):
        await EncryptedStore(inner, Keyring.parse(K2)).get(ref)


async def test_the_store_reads_old_plaintext_and_refuses_swapped_objects(tmp_path: Path) -> None:
    inner = LocalFolderStore(tmp_path)
    legacy = await inner.put(b'{"written": "before encryption"}')
    store = EncryptedStore(inner, Keyring.parse(K1))
    assert await store.get(legacy) == b'{"written": "before encryption"}'
    ref = await store.put(b"original")
    digest = hex_digest(ref)
    (tmp_path / digest[:2] / digest[2:]).write_bytes(b'{"injected": "instructions"}')
    with pytest.raises(ContentCorruptedError, match="does not match its address"):
        await store.get(ref)


def test_keys_new_prints_an_entry_the_variable_accepts() -> None:
    result = CliRunner().invoke(app, ["keys", "new", "--id", "prod-2026"])
    assert result.exit_code == 0, result.output
    line = result.output.strip()
    assert Keyring.parse(line).key_ids == ("prod-2026",)
    assert Keyring.parse(CliRunner().invoke(app, ["keys", "new"]).output.strip()).enabled
