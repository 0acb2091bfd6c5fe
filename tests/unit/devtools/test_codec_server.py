"""Requests the codec server must refuse, sent over HTTP as an attacker would: a page that rebinds
its own name to the codec server's address (its requests then carry that name in `Host`), a
request without a namespace, references that resolve to nothing, and bodies too large to parse.
Unless a test says otherwise, the server runs as `turnkeeper codec-server` does by default:
on loopback, without a token."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Final

import pytest
from google.protobuf import json_format
from temporalio.api.common.v1 import Payload, Payloads
from temporalio.api.sdk.v1.external_storage_pb2 import ExternalStorageReference

from tests.conftest import make_settings
from tests.support.codec_client import Codec, payloads_json
from tests.support.encrypted_stack import OLD_KEY
from turnkeeper.devtools.codec_server import (
    MAX_PAYLOADS_PER_REQUEST,
    MAX_REQUEST_BYTES,
    Access,
    CodecServerError,
    CodecService,
    check_exposure,
    running_codec_server,
)
from turnkeeper.payloads.keyring import Keyring
from turnkeeper.payloads.stores import open_store

SECRET: Final = "lantern-ferry-5521"
REFERENCE_TYPE: Final = ExternalStorageReference.DESCRIPTOR.full_name.encode()
TOKEN: Final = "s3cret-token"


Serve = Callable[[Access], AbstractAsyncContextManager[Codec]]


@pytest.fixture
def serve(tmp_path: Path) -> Serve:
    """Starts a codec server over a fresh encrypted store with `access`."""

    @asynccontextmanager
    async def serving(access: Access) -> AsyncIterator[Codec]:
        keyring = Keyring.parse(OLD_KEY)
        store = open_store(make_settings(tmp_path, "unused"), keyring)
        service = CodecService.over(store, keyring)
        plain = Payload(metadata={"encoding": b"json/plain"}, data=json.dumps(SECRET).encode())
        [encrypted] = await service.encode([plain])
        async with running_codec_server(service, access, host="127.0.0.1", port=0) as url:
            yield Codec(url, tmp_path / "data" / "store", encrypted)

    return serving


@pytest.fixture
async def codec(serve: Serve) -> AsyncIterator[Codec]:
    async with serve(Access(frozenset({"default"}), None, frozenset())) as running:
        yield running


def decoded(text: str) -> bytes:
    """The data of the payloads of an answer, joined."""
    return b"\n".join(p.data for p in json_format.Parse(text, Payloads()).payloads)


@pytest.mark.parametrize(
    "host", ["rebound.attacker.example", "127.0.0.1.nip.io", "localhost.attacker.example"]
)
async def test_a_host_name_it_does_not_serve_is_refused(codec: Codec, host: str) -> None:
    # A page on a name whose DNS now answers 127.0.0.1 is same-origin with its own requests.
    status, text = await codec.decode([codec.encrypted], Host=f"{host}:{codec.port}")
    assert status == 403, text
    assert "payloads" not in text
    assert "is not a name this codec server answers to" in json.loads(text)["message"]


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "LOCALHOST.", "[::1]"])
async def test_its_own_loopback_names_are_served(codec: Codec, host: str) -> None:
    status, text = await codec.decode([codec.encrypted], Host=f"{host}:{codec.port}")
    assert status == 200, text
    assert SECRET.encode() in decoded(text)


async def test_allowed_host_names_can_be_added(serve: Serve) -> None:
    access = Access(frozenset({"default"}), None, frozenset(), hosts=frozenset({"codec.lan"}))
    async with serve(access) as codec:
        assert (await codec.decode([codec.encrypted], Host="codec.lan:8081"))[0] == 200
        assert (await codec.decode([codec.encrypted], Host="codec.lan"))[0] == 200
        assert (await codec.decode([codec.encrypted], Host="other.lan"))[0] == 403


async def test_with_a_token_any_host_may_ask(serve: Serve) -> None:
    # A rebinding page cannot send the token; a proxy in front may set a Host of its own.
    async with serve(Access(frozenset({"default"}), TOKEN, frozenset())) as codec:
        bearer = f"Bearer {TOKEN}"
        status, text = await codec.decode(
            [codec.encrypted], Host="codec.corp", Authorization=bearer
        )
        assert status == 200 and SECRET.encode() in decoded(text)


async def test_the_namespace_header_is_required(codec: Codec) -> None:
    status, text = await codec.decode([codec.encrypted], **{"X-Namespace": ""})
    assert status == 400, text
    assert json.loads(text)["message"] == "the X-Namespace header is required"
    assert (await codec.decode([codec.encrypted], **{"X-Namespace": "payments"}))[0] == 403


def reference(claim: dict[str, str] | None, *, data: bytes | None = None) -> Payload:
    message = ExternalStorageReference(driver_name="turnkeeper", claim_data=claim or {})
    return Payload(
        metadata={"encoding": b"json/protobuf", "messageType": REFERENCE_TYPE},
        data=json_format.MessageToJson(message).encode() if data is None else data,
    )


@pytest.mark.parametrize(
    ("payload", "why"),
    [
        (reference({"ref": "sha256:" + "A" * 43}), "the content store has nothing under it"),
        (reference({"ref": "../../etc/passwd"}), "the content store has nothing under it"),
        (reference({}), "it names no content"),
        (reference(None, data=b"{not json"), "it is not a storage reference"),
    ],
)
async def test_a_reference_that_resolves_to_nothing_is_a_short_422(
    codec: Codec, caplog: pytest.LogCaptureFixture, payload: Payload, why: str
) -> None:
    caplog.set_level(logging.DEBUG)
    status, text = await codec.decode([codec.encrypted, payload])
    assert status == 422, text
    assert json.loads(text) == {"message": f"payload 1 cannot be resolved: {why}"}
    assert str(codec.store_root) not in caplog.text
    # Kept as they are, references are not looked up at all.
    status, text = await codec.post(
        "/decode?preserveStorageRefs=true",
        payloads_json([payload]),
        {"Host": f"127.0.0.1:{codec.port}", "X-Namespace": "default"},
    )
    assert status == 200, text


async def test_a_reference_to_content_swapped_in_the_store_is_a_short_422(
    codec: Codec, caplog: pytest.LogCaptureFixture
) -> None:
    digest = "ab" * 32
    swapped = codec.store_root / digest[:2] / digest[2:]
    swapped.parent.mkdir(parents=True, exist_ok=True)
    swapped.write_bytes(b"not what the reference names")
    status, text = await codec.decode([reference({"ref": f"sha256:{digest}"})])
    assert status == 422, text
    assert json.loads(text) == {
        "message": "payload 0 cannot be resolved: its stored content does not match it"
    }
    assert str(codec.store_root) not in caplog.text


async def test_a_body_over_the_size_limit_is_refused(codec: Codec) -> None:
    headers = {"Host": f"127.0.0.1:{codec.port}", "X-Namespace": "default"}
    status, _ = await codec.post("/decode", b" " * (MAX_REQUEST_BYTES + 1), headers)
    assert status == 413
    assert MAX_REQUEST_BYTES <= 16 * 1024 * 1024


async def test_too_many_payloads_are_refused_before_they_are_parsed(codec: Codec) -> None:
    many = [Payload(metadata={"encoding": b"binary/null"})] * (MAX_PAYLOADS_PER_REQUEST + 1)
    status, text = await codec.decode(many)
    assert status == 413, text
    assert json.loads(text)["message"] == (
        f"at most {MAX_PAYLOADS_PER_REQUEST} payloads are decoded per request"
    )
    assert (await codec.decode(many[:MAX_PAYLOADS_PER_REQUEST]))[0] == 200


def test_listening_beyond_loopback_needs_a_token() -> None:
    with pytest.raises(CodecServerError, match="TURNKEEPER_CODEC_TOKEN"):
        check_exposure("0.0.0.0", None)
    check_exposure("0.0.0.0", "a-token")
    check_exposure("127.0.0.1", None)
    check_exposure("::1", None)
    check_exposure("localhost", None)
