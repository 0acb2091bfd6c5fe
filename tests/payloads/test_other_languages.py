"""`docs/other-languages.md` against the code: the encrypted payload's layout, read and written by
the TypeScript example's codec (written from that page) and by turnkeeper's own; the storage
reference and the encrypted store object as the page describes them, opened here by hand; and
the figures the page states (thresholds, limits) as the code has them."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import subprocess
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from temporalio.api.common.v1 import Payload

from tests.support.typescript_example import EXAMPLE, built_cli
from turnkeeper.devtools import codec_server
from turnkeeper.payloads import encryption_codec, keyring, payload_storage
from turnkeeper.payloads.content_store import LocalFolderStore
from turnkeeper.payloads.encrypted_store import EncryptedStore
from turnkeeper.payloads.encryption_codec import EncryptionCodec
from turnkeeper.payloads.keyring import Keyring, new_key_entry

PAGE = Path(__file__).resolve().parents[2] / "docs" / "other-languages.md"
# Runs the example's compiled codec: encodes or decodes the payloads on stdin (metadata values and
# data in base64) with the keys of TURNKEEPER_ENCRYPTION_KEYS.
_SCRIPT = """
import { readFileSync } from 'node:fs';
import { EncryptionCodec, parseKeys } from './dist/codec.js';
const how = process.argv[1];
const b64 = (bytes) => Buffer.from(bytes).toString('base64');
const raw = (text) => Buffer.from(text, 'base64');
const payloads = JSON.parse(readFileSync(0, 'utf8')).map((p) => ({
  metadata: Object.fromEntries(Object.entries(p.metadata).map(([k, v]) => [k, raw(v)])),
  data: raw(p.data),
}));
const codec = new EncryptionCodec(parseKeys(process.env.TURNKEEPER_ENCRYPTION_KEYS));
const out = await (how === 'decode' ? codec.decode(payloads) : codec.encode(payloads));
process.stdout.write(JSON.stringify(out.map((p) => ({
  metadata: Object.fromEntries(Object.entries(p.metadata).map(([k, v]) => [k, b64(v)])),
  data: b64(p.data),
}))));
"""


def page() -> str:
    """The page's text with its line breaks as spaces."""
    return " ".join(PAGE.read_text().split())


def as_json(payload: Payload) -> dict[str, Any]:
    return {
        "metadata": {k: base64.b64encode(v).decode() for k, v in payload.metadata.items()},
        "data": base64.b64encode(payload.data).decode(),
    }


def from_json(item: dict[str, Any]) -> Payload:
    metadata = {k: base64.b64decode(v) for k, v in item["metadata"].items()}
    return Payload(metadata=metadata, data=base64.b64decode(item["data"]))


def typescript_codec(how: str, payloads: list[Payload], keys: str) -> list[Payload]:
    """The example's codec (`examples/typescript/src/codec.ts`) on `payloads`, in node."""
    node, _ = built_cli()
    done = subprocess.run(
        [node, "--input-type=module", "-e", _SCRIPT, how],
        input=json.dumps([as_json(p) for p in payloads]),
        env={"TURNKEEPER_ENCRYPTION_KEYS": keys, "PATH": str(Path(node).parent)},
        cwd=EXAMPLE,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return [from_json(item) for item in json.loads(done.stdout)]


def sample_payloads() -> list[Payload]:
    report = {"outcome": "completed", "output": "Grüße, 世界", "cost_usd": 0.0123}
    return [
        Payload(metadata={"encoding": b"json/plain"}, data=json.dumps(report).encode()),
        Payload(metadata={"encoding": b"binary/null"}, data=b""),
    ]


async def test_the_typescript_codec_opens_what_python_seals_and_python_opens_what_it_seals() -> (
    None
):
    keys = f"{new_key_entry('k-new')},{new_key_entry('k-old')}"
    python = EncryptionCodec(Keyring.parse(keys))
    originals = sample_payloads()

    sealed_by_python = await python.encode(originals)
    opened_in_node = typescript_codec("decode", sealed_by_python, keys)
    sealed_in_node = typescript_codec("encode", originals, keys)
    opened_by_python = await python.decode(sealed_in_node)

    assert opened_in_node == originals and opened_by_python == originals
    for sealed in sealed_in_node:
        assert dict(sealed.metadata) == {
            "encoding": b"binary/encrypted",
            "encryption-key-id": b"k-new",
        }
    # Random nonces: the same payload seals differently each time.
    assert sealed_in_node[0].data != typescript_codec("encode", originals[:1], keys)[0].data


async def test_the_layout_as_the_page_states_it_opens_python_s_payloads_by_hand() -> None:
    entry = new_key_entry("k1")
    secret = base64.b64decode(entry.partition(":")[2])
    original = sample_payloads()[0]
    [sealed] = await EncryptionCodec(Keyring.parse(entry)).encode([original])

    # nonce (12) | ciphertext | tag (16), no associated data; the plaintext a serialized Payload.
    nonce, rest = sealed.data[:12], sealed.data[12:]
    opened = AESGCM(secret).decrypt(nonce, rest, None)

    assert Payload.FromString(opened) == original
    assert len(sealed.data) == 12 + len(original.SerializeToString()) + 16
    assert sealed.metadata["encryption-key-id"] == b"k1"


async def test_a_stored_payload_and_its_reference_are_as_the_page_describes(tmp_path: Path) -> None:
    entry = new_key_entry("k1")
    secret = base64.b64decode(entry.partition(":")[2])
    keys = Keyring.parse(entry)
    store = EncryptedStore(LocalFolderStore(tmp_path), keys)
    converter = payload_storage.turn_data_converter(store, keys)
    value = {"output": "x" * payload_storage.LARGE_PAYLOAD_BYTES}

    [reference] = await converter.encode([value])
    claim = json.loads(reference.data)
    stored = tmp_path / _hex(claim["claimData"]["ref"])[:2] / _hex(claim["claimData"]["ref"])[2:]
    data = stored.read_bytes()
    header_length = 4 + 1 + data[4]
    nonce, sealed = data[header_length : header_length + 12], data[header_length + 12 :]
    inner = Payload.FromString(AESGCM(secret).decrypt(nonce, sealed, data[:header_length]))

    assert reference.metadata["encoding"] == b"json/protobuf"
    assert reference.metadata["messageType"] == b"temporal.api.sdk.v1.ExternalStorageReference"
    assert claim["driverName"] == "turnkeeper" and set(claim) == {"driverName", "claimData"}
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    assert claim["claimData"] == {"ref": f"sha256:{digest}"}
    assert data[:5] == b"TKE1\x02" and data[5:7] == b"k1"
    # What is stored is the encrypted payload, which the codec then opens.
    assert inner.metadata["encoding"] == b"binary/encrypted"
    assert await converter.decode([reference], [dict]) == [value]


def _hex(ref: str) -> str:
    return base64.urlsafe_b64decode(ref.removeprefix("sha256:") + "=").hex()


def test_the_page_states_the_code_s_names_and_figures() -> None:
    text = page()
    kib = 1024
    figures = {
        f'`metadata["encoding"]` | the UTF-8 bytes of `{encryption_codec.ENCODING.decode()}`',
        f'`metadata["{encryption_codec.KEY_ID_METADATA}"]`',
        f"a random {keyring.NONCE_BYTES}-byte nonce",
        f"{keyring.KEY_BYTES} random bytes (AES-256)",
        f'`metadata["{payload_storage._MARK}"]`',
        f"{payload_storage.LARGE_PAYLOAD_BYTES // kib} KiB or more",
        f"from {payload_storage.CLAIM_CHECK_BYTES // kib} KiB",
        f"over {codec_server.MAX_REQUEST_BYTES // kib // kib} MiB",
        f"more than {codec_server.MAX_PAYLOADS_PER_REQUEST:,} payloads",
    }
    missing = [figure for figure in figures if figure not in text]
    assert missing == []
    assert codec_server.CODEC_TOKEN_ENV == "TURNKEEPER_CODEC_TOKEN"
    assert re.search(r"TKE1 ‖ one byte: length of the key id ‖ key id ‖ nonce \(12\)", text)
