"""A whole turn on an S3 content store: the worker's activities, its data converter and the client
all keep content in one bucket of a real S3-compatible server (moto's), as a cluster would; with
encryption on, the bucket holds only ciphertext."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client
from turnkeeper.contracts.messages import ToolResultBlock
from turnkeeper.contracts.names import WORKFLOW_TYPE
from turnkeeper.contracts.turn import AgentReport

from tests.conftest import make_settings, new_key, running_worker, scripted_request
from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.support.s3_server import bucket_objects, create_bucket, moto_s3
from turnkeeper.payloads.content_store import ContentStore
from turnkeeper.payloads.encrypted_store import EncryptedStore, encrypting
from turnkeeper.payloads.keyring import Keyring, new_key_entry
from turnkeeper.payloads.payload_storage import turn_data_converter
from turnkeeper.payloads.s3_store import S3Store
from turnkeeper.payloads.stores import open_store
from turnkeeper.worker import wiring
from turnkeeper.worker.settings import Settings

_REFERENCE_TYPE = b"temporal.api.sdk.v1.ExternalStorageReference"


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    with moto_s3() as endpoint:
        yield endpoint


@pytest.fixture(params=[False, True], ids=["plaintext", "encrypted"])
def bucket_keyring(request: pytest.FixtureRequest) -> Keyring:
    return Keyring.parse(new_key_entry("s3")) if request.param else Keyring()


@pytest.fixture
def worker_stores(monkeypatch: pytest.MonkeyPatch, bucket_keyring: Keyring) -> list[ContentStore]:
    """The stores the worker wiring opens from its settings, so that the test can close them."""
    opened: list[ContentStore] = []

    def recording_open_store(settings: Settings) -> ContentStore:
        opened.append(open_store(settings, bucket_keyring))
        return opened[-1]

    monkeypatch.setattr(wiring, "open_store", recording_open_store)
    return opened


def _unwrapped(store: ContentStore) -> ContentStore:
    return store.inner if isinstance(store, EncryptedStore) else store


async def test_a_turn_keeps_its_content_in_the_s3_bucket(
    client: Client,
    fake_anthropic: FakeAnthropic,
    tmp_path: Path,
    s3_endpoint: str,
    worker_stores: list[ContentStore],
    bucket_keyring: Keyring,
) -> None:
    keyring = bucket_keyring
    bucket = await create_bucket(s3_endpoint)
    # The activities find the bucket through the settings and the endpoint through
    # AWS_ENDPOINT_URL, as a deployed worker would.
    settings = dataclasses.replace(
        make_settings(tmp_path, f"tq-{uuid.uuid4()}"), store_url=f"s3://{bucket}/turns"
    )
    lines = "".join(f"line {i:03}: kept in the shared bucket\n" for i in range(80))
    (settings.workspace / "shared.txt").write_text(lines)
    key = new_key()
    fake_anthropic.script(
        key, [fake.tool_calls(("read_file", {"path": "shared.txt"})), fake.text("Read it.")]
    )
    payloads = S3Store(bucket, "turns")
    converter = turn_data_converter(encrypting(payloads, keyring), keyring)
    s3_client = Client(**{**client.config(), "data_converter": converter})

    try:
        async with running_worker(s3_client, settings, fake_anthropic):
            handle = await s3_client.start_workflow(
                WORKFLOW_TYPE,
                scripted_request(key),
                id=f"turn-{uuid.uuid4()}",
                task_queue=settings.task_queue,
                result_type=AgentReport,
            )
            report = await handle.result()
            events = [event async for event in handle.fetch_history_events()]
    finally:
        for store in [payloads, *map(_unwrapped, worker_stores)]:
            if isinstance(store, S3Store):
                await store.aclose()

    unwrapped = [_unwrapped(store) for store in worker_stores]
    assert unwrapped and all(isinstance(store, S3Store) for store in unwrapped)
    assert report.outcome == "completed"
    assert report.output == "Read it."
    [result] = [b for b in report.messages[2].content if isinstance(b, ToolResultBlock)]
    assert lines in result.text()
    objects = await bucket_objects(s3_endpoint, bucket)
    assert objects and all(name.startswith("turns/sha256/") for name in objects)
    plaintext = any(b"line 079: kept in the shared bucket" in data for data in objects.values())
    assert plaintext != keyring.enabled
    # The tool result went through the data converter to the bucket, not into history.
    assert _REFERENCE_TYPE in _activity_result_types(events)
    # The conversation store is the bucket too: nothing fell back to the local folder.
    assert not settings.store_dir.exists()


def _activity_result_types(events: list[HistoryEvent]) -> list[bytes]:
    return [
        event.activity_task_completed_event_attributes.result.payloads[0].metadata.get(
            "messageType", b""
        )
        for event in events
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED
    ]
