"""The S3 content store against a real S3-compatible HTTP server (moto's)."""

from __future__ import annotations

import asyncio
import dataclasses
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from botocore.exceptions import ClientError
from turnkeeper.contracts.activity_io import ToolCallResult

from tests.conftest import make_settings
from tests.support.s3_server import bucket_objects, create_bucket, moto_s3
from turnkeeper.payloads.content_store import ContentMissingError, content_ref, hex_digest
from turnkeeper.payloads.keyring import Keyring
from turnkeeper.payloads.payload_storage import CLAIM_CHECK_BYTES, turn_data_converter
from turnkeeper.payloads.s3_store import MISSING_EXTRA, S3Store
from turnkeeper.payloads.stores import open_store
from turnkeeper.worker.settings import Settings

_REFERENCE_TYPE = b"temporal.api.sdk.v1.ExternalStorageReference"


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    with moto_s3() as endpoint:
        yield endpoint


@pytest.fixture
async def bucket(s3_endpoint: str) -> str:
    return await create_bucket(s3_endpoint)


@pytest.fixture
async def store(s3_endpoint: str, bucket: str) -> AsyncIterator[S3Store]:
    store = S3Store(bucket, endpoint_url=s3_endpoint)
    yield store
    await store.aclose()


async def test_put_then_get_returns_the_same_bytes(store: S3Store) -> None:
    data = b"\x00hello, cluster\xff" * 100

    ref = await store.put(data)

    assert ref == content_ref(data)
    assert await store.get(ref) == data


async def test_putting_the_same_bytes_twice_gives_one_object(
    store: S3Store, s3_endpoint: str, bucket: str
) -> None:
    first = await store.put(b"same bytes")
    second = await store.put(b"same bytes")

    assert first == second
    assert list(await bucket_objects(s3_endpoint, bucket)) == [f"sha256/{hex_digest(first)}"]


@pytest.mark.parametrize("prefix", ["team/turns", "team/turns/"])
async def test_objects_live_under_the_prefix_by_hex_digest(
    s3_endpoint: str, bucket: str, prefix: str
) -> None:
    store = S3Store(bucket, prefix, endpoint_url=s3_endpoint)
    try:
        ref = await store.put(b"prefixed")
    finally:
        await store.aclose()

    objects = await bucket_objects(s3_endpoint, bucket)
    assert objects == {f"team/turns/sha256/{hex_digest(ref)}": b"prefixed"}


async def test_a_missing_object_is_content_missing_naming_where_it_was_looked_for(
    store: S3Store, bucket: str
) -> None:
    ref = content_ref(b"never stored")

    with pytest.raises(ContentMissingError) as missing:
        await store.get(ref)

    assert ref in str(missing.value)
    assert f"s3://{bucket}/sha256/{hex_digest(ref)}" in str(missing.value)


async def test_a_malformed_reference_is_content_missing(store: S3Store) -> None:
    with pytest.raises(ContentMissingError, match="not a content reference"):
        await store.get("sha256:../../etc/passwd")


async def test_a_bucket_that_does_not_exist_is_a_broken_store_not_missing_content(
    s3_endpoint: str,
) -> None:
    store = S3Store("tk-no-such-bucket", endpoint_url=s3_endpoint)
    try:
        with pytest.raises(ClientError) as on_get:
            await store.get(content_ref(b"anything"))
        with pytest.raises(ClientError) as on_put:
            await store.put(b"anything")
    finally:
        await store.aclose()

    assert not isinstance(on_get.value, ContentMissingError)
    assert on_get.value.response["Error"]["Code"] == "NoSuchBucket"
    assert on_put.value.response["Error"]["Code"] == "NoSuchBucket"


async def test_concurrent_first_uses_open_one_client(
    store: S3Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened = 0
    open_client = store._open

    async def counting_open() -> object:
        nonlocal opened
        opened += 1
        await asyncio.sleep(0.05)  # Leaves every other first use time to race this one.
        return await open_client()

    monkeypatch.setattr(store, "_open", counting_open)

    refs = await asyncio.gather(*(store.put(bytes([i])) for i in range(8)))

    assert opened == 1
    assert [await store.get(ref) for ref in refs] == [bytes([i]) for i in range(8)]


async def test_a_closed_store_opens_again_on_next_use(store: S3Store) -> None:
    ref = await store.put(b"before close")
    await store.aclose()

    assert await store.get(ref) == b"before close"


async def test_a_large_tool_result_goes_to_s3_and_comes_back_whole(
    store: S3Store, s3_endpoint: str, bucket: str
) -> None:
    converter = turn_data_converter(store)
    value = ToolCallResult(
        block_ref="sha256:x", is_error=False, content="a" * (4 * 1024), duration_ms=1
    )

    [payload] = await converter.encode([value])

    assert payload.metadata.get("messageType") == _REFERENCE_TYPE
    assert payload.ByteSize() < CLAIM_CHECK_BYTES
    [stored] = (await bucket_objects(s3_endpoint, bucket)).values()
    assert b"a" * 4096 in stored
    [decoded] = await converter.decode([payload], [ToolCallResult])
    assert decoded == value


def _settings(tmp_path: Path, store_url: str | None) -> Settings:
    return dataclasses.replace(make_settings(tmp_path, "tq-s3"), store_url=store_url)


async def test_an_s3_url_opens_an_s3_store_on_that_bucket_and_prefix(
    tmp_path: Path, s3_endpoint: str
) -> None:
    store = open_store(_settings(tmp_path, "s3://turn-bucket/pre"), Keyring())

    assert isinstance(store, S3Store)
    assert (store.bucket, store.prefix) == ("turn-bucket", "pre/")


@pytest.mark.parametrize("url", ["gs://x", "s3://", "s3:///prefix", "turn-bucket/pre"])
def test_a_url_that_names_no_s3_bucket_is_refused(tmp_path: Path, url: str) -> None:
    with pytest.raises(ValueError, match="TURNKEEPER_STORE_URL"):
        open_store(_settings(tmp_path, url))


def test_without_a_store_url_the_local_folder_is_used(tmp_path: Path) -> None:
    settings = _settings(tmp_path, None)

    assert getattr(open_store(settings, Keyring()), "root", None) == settings.store_dir


def test_the_store_url_is_read_from_the_environment_and_empty_is_unset() -> None:
    url = "s3://b/p"
    assert Settings.from_env({"TURNKEEPER_STORE_URL": url}).store_url == url
    assert Settings.from_env({"TURNKEEPER_STORE_URL": ""}).store_url is None
    assert Settings.from_env({}).store_url is None


def test_without_the_s3_extra_an_s3_url_says_which_extra_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "aioboto3", None)  # None makes the import fail.

    with pytest.raises(RuntimeError) as refused:
        open_store(_settings(tmp_path, "s3://turn-bucket"))

    assert str(refused.value) == MISSING_EXTRA
