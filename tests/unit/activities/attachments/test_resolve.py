"""A model call reads its conversation's attachments back from the store: stored sources become
base64 for the provider, in user messages and tool results alike; a type the provider does not
take, or a reference the store lost, fails the turn as InvalidTurnRequest instead of a retry."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from temporalio.exceptions import ApplicationError
from turnkeeper.activities.attachments.resolve import AttachmentReader
from turnkeeper.contracts.attachments import (
    ACCEPTED_TYPES,
    Base64Source,
    DocumentBlock,
    ImageBlock,
    StoredSource,
)
from turnkeeper.contracts.messages import Message, TextBlock, ToolResultBlock

from tests.support.attachment_files import pdf_of, png_of
from turnkeeper.payloads.content_store import LocalFolderStore


async def test_stored_attachments_reach_the_provider_as_their_bytes(tmp_path: Path) -> None:
    store = LocalFolderStore(tmp_path)
    png, pdf = png_of(1024), pdf_of()
    image = ImageBlock(
        source=StoredSource(ref=await store.put(png), media_type="image/png", size=len(png))
    )
    document = DocumentBlock(
        source=StoredSource(ref=await store.put(pdf), media_type="application/pdf", size=len(pdf)),
        name="invoice.pdf",
    )
    result = ToolResultBlock(tool_use_id="t1", content=[TextBlock(text="shot"), image])
    messages = [
        Message(role="user", content=[TextBlock(text="read"), document]),
        Message(role="assistant", content=[TextBlock(text="ok")]),
        Message(role="user", content=[result]),
    ]

    resolved = await AttachmentReader(store).with_bytes(
        messages, ACCEPTED_TYPES["anthropic"], "anthropic:claude-sonnet-4-6"
    )

    sent_pdf = resolved[0].content[1]
    assert isinstance(sent_pdf, DocumentBlock) and sent_pdf.name == "invoice.pdf"
    assert sent_pdf.source == Base64Source(
        media_type="application/pdf", data=base64.b64encode(pdf).decode()
    )
    sent_result = resolved[2].content[0]
    assert isinstance(sent_result, ToolResultBlock) and isinstance(sent_result.content, list)
    sent_png = sent_result.content[1]
    assert isinstance(sent_png, ImageBlock) and isinstance(sent_png.source, Base64Source)
    assert base64.b64decode(sent_png.source.data) == png
    assert messages[0].content[1] is document  # the stored conversation keeps its reference


async def test_a_type_the_provider_refuses_or_a_lost_reference_is_an_invalid_request(
    tmp_path: Path,
) -> None:
    store = LocalFolderStore(tmp_path)
    text_ref = await store.put(b"plain words")
    plain = DocumentBlock(
        source=StoredSource(ref=text_ref, media_type="text/plain", size=11), name="notes.txt"
    )
    lost = ImageBlock(source=StoredSource(ref="sha256:" + "A" * 43, media_type="image/png", size=9))
    reader = AttachmentReader(store)

    for block, needle in [(plain, "'notes.txt' is text/plain"), (lost, "cannot be read")]:
        with pytest.raises(ApplicationError) as refused:
            await reader.with_bytes(
                [Message(role="user", content=[block])], ACCEPTED_TYPES["openai"], "openai:gpt"
            )
        assert refused.value.type == "InvalidTurnRequest" and refused.value.non_retryable
        assert needle in refused.value.message
