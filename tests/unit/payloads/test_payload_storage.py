"""What the data converter keeps out of history, and that it always reads it back."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.converter import StorageDriverClaim, StorageDriverRetrieveContext
from turnkeeper.activities.store.conversation_store import ConversationStore
from turnkeeper.contracts.activity_io import (
    CallContext,
    ConversationDelta,
    MessageDraft,
    ToolCallResult,
)
from turnkeeper.contracts.messages import Message, TextBlock
from turnkeeper.contracts.signals import ApproveInput

from turnkeeper.payloads.content_store import (
    ContentMissingError,
    LocalFolderStore,
    content_ref,
    hex_digest,
)
from turnkeeper.payloads.payload_driver import ContentStoreDriver
from turnkeeper.payloads.payload_storage import (
    CLAIM_CHECK_BYTES,
    LARGE_PAYLOAD_BYTES,
    turn_data_converter,
)

_REFERENCE_TYPE = b"temporal.api.sdk.v1.ExternalStorageReference"


@pytest.fixture
def store(tmp_path: Path) -> LocalFolderStore:
    return LocalFolderStore(tmp_path / "store")


def _tool_result(size: int) -> ToolCallResult:
    return ToolCallResult(block_ref="sha256:x", is_error=False, content="a" * size, duration_ms=1)


def _is_reference(payload: Payload) -> bool:
    return payload.metadata.get("messageType") == _REFERENCE_TYPE


async def test_a_large_tool_result_leaves_history_and_comes_back_whole(
    store: LocalFolderStore,
) -> None:
    converter = turn_data_converter(store)
    value = _tool_result(4 * CLAIM_CHECK_BYTES)

    [payload] = await converter.encode([value])

    assert _is_reference(payload)
    assert payload.ByteSize() < 300
    [decoded] = await converter.decode([payload], [ToolCallResult])
    assert decoded == value


async def test_a_small_tool_result_stays_inline(store: LocalFolderStore) -> None:
    [payload] = await turn_data_converter(store).encode([_tool_result(100)])

    assert not _is_reference(payload)
    assert b"aaaa" in payload.data


async def test_what_people_read_stays_inline_until_it_is_huge(store: LocalFolderStore) -> None:
    converter = turn_data_converter(store)
    readable = ApproveInput(call_id="toolu_1", approved=True, reason="r" * (4 * CLAIM_CHECK_BYTES))
    huge = ApproveInput(call_id="toolu_1", approved=True, reason="r" * LARGE_PAYLOAD_BYTES)

    [inline, stored] = await converter.encode([readable, huge])

    assert not _is_reference(inline)
    assert _is_reference(stored)
    [back] = await converter.decode([stored], [ApproveInput])
    assert back == huge


async def test_storing_the_same_payload_twice_gives_the_same_reference(
    store: LocalFolderStore,
) -> None:
    converter = turn_data_converter(store)
    value = _tool_result(4 * CLAIM_CHECK_BYTES)

    first, second = await converter.encode([value, value])

    assert first == second
    assert len([p for p in (store.root).rglob("*") if p.is_file()]) == 1


async def test_a_lost_object_is_a_clear_error_naming_the_store(
    store: LocalFolderStore, tmp_path: Path
) -> None:
    driver = ContentStoreDriver(store)
    claim = StorageDriverClaim({"ref": content_ref(b"never stored")})

    with pytest.raises(ContentMissingError, match=str(store.root)):
        await driver.retrieve(StorageDriverRetrieveContext(), [claim])


def test_references_are_base64_and_hex_references_still_name_the_same_object() -> None:
    ref = content_ref(b"hello")
    legacy = "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"

    assert len(ref) == 50
    assert hex_digest(ref) == hex_digest(legacy)


@pytest.mark.parametrize(
    "ref",
    [
        "",
        "sha256:",
        "md5:abc",
        "sha256:../../etc/passwd",
        "sha256:" + "Z" * 64,
        "sha256:" + "a" * 42,
    ],
)
def test_a_malformed_reference_is_refused(ref: str) -> None:
    with pytest.raises(ContentMissingError, match="not a content reference"):
        hex_digest(ref)


async def test_a_legacy_hex_reference_reads_what_a_base64_one_wrote(
    store: LocalFolderStore,
) -> None:
    ref = await store.put(b"hello")

    assert await store.get("sha256:" + hex_digest(ref)) == b"hello"


async def test_the_conversation_root_holds_the_context(store: LocalFolderStore) -> None:
    context = CallContext(system_prompt="be brief")
    first = ConversationDelta(append=[MessageDraft(role="user", content=[TextBlock(text="hi")])])
    written = await ConversationStore(store).resolve(first, context)

    # A fresh store object (another worker, no cache) finds the context from the head alone.
    read = await ConversationStore(store).load(written.head or "")

    assert read.context == context
    assert [m.text() for m in read.messages] == ["hi"]


async def test_a_chain_without_a_context_root_still_loads(store: LocalFolderStore) -> None:
    conversations = ConversationStore(store)
    legacy = await conversations.resolve(ConversationDelta())
    await conversations.append(legacy, Message(role="user", content=[TextBlock(text="old")]))

    read = await ConversationStore(store).load(legacy.head or "")

    assert read.context is None
    assert [m.text() for m in read.messages] == ["old"]
