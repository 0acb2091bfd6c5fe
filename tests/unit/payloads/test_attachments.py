"""Attachments checked, then stored: the media type read from the bytes, each provider's types,
the size of one and of all, each refused before anything is stored; stored ones pass through."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from turnkeeper.contracts.attachments import (
    AttachmentLimits,
    Base64Source,
    DocumentBlock,
    Image,
    ImageBlock,
    StoredSource,
    sniff_media_type,
)

from tests.support.attachment_files import pdf_of, png_of
from turnkeeper.payloads.attachments import AttachmentRefused, load_base64, store_blocks
from turnkeeper.payloads.content_store import LocalFolderStore


def image(data: bytes, media_type: str = "image/png", name: str | None = None) -> ImageBlock:
    source = Base64Source(media_type=media_type, data=base64.b64encode(data).decode())
    return ImageBlock(source=source, name=name)


def stored_files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


async def test_blocks_are_stored_by_reference_in_order(tmp_path: Path) -> None:
    store = LocalFolderStore(tmp_path)
    png, pdf = png_of(2048), pdf_of()
    blocks = [image(png, name="a.png"), image(pdf, "application/pdf", name="b.pdf")]

    stored = await store_blocks(blocks, store, AttachmentLimits(), {"openai"}, load_base64)

    assert [type(b) for b in stored] == [ImageBlock, DocumentBlock]
    sources = [b.source for b in stored]
    assert all(isinstance(s, StoredSource) for s in sources)
    assert [await store.get(s.ref) for s in sources] == [png, pdf]  # type: ignore[union-attr]
    assert [(s.media_type, s.size) for s in sources] == [  # type: ignore[union-attr]
        ("image/png", len(png)),
        ("application/pdf", len(pdf)),
    ]
    again = await store_blocks(stored, store, AttachmentLimits(), {"openai"}, load_base64)
    assert again == stored


@pytest.mark.parametrize(
    ("blocks", "limits", "providers", "needles"),
    [
        ([image(png_of(2048), name="x.png")], AttachmentLimits(max_bytes=1000), {"anthropic"},
         ["'x.png' is 2048 bytes", "1000-byte limit of one attachment",
          "TURNKEEPER_ATTACHMENT_MAX_BYTES"]),
        ([image(png_of(800)), image(png_of(800))], AttachmentLimits(max_turn_bytes=1500),
         {"anthropic"}, ["1600 bytes together", "1500-byte limit of one turn"]),
        ([image(b"GIF89a" + bytes(20), "image/png", name="y.png")], AttachmentLimits(),
         {"anthropic"}, ["'y.png' is image/gif by its bytes, not image/png"]),
        ([image(b"hello", "image/jpeg")], AttachmentLimits(), {"anthropic"},
         ["attachment 1 says image/jpeg, but its bytes are not image/jpeg"]),
        ([image(b"plain words", "text/plain", name="n.txt")], AttachmentLimits(), {"openai"},
         ["'n.txt' is text/plain, which openai models do not take"]),
        ([image(b"!!", "image/png", name="z.png").model_copy(
            update={"source": Base64Source(media_type="image/png", data="%%%")})],
         AttachmentLimits(), {"anthropic"}, ["'z.png': source.data is not base64"]),
    ],
    ids=["too-big", "turn-too-big", "says-another-type", "not-its-type", "type-refused",
         "not-base64"],
)  # fmt: skip
async def test_what_does_not_fit_is_refused_before_anything_is_stored(
    tmp_path: Path,
    blocks: list[ImageBlock],
    limits: AttachmentLimits,
    providers: set[str],
    needles: list[str],
) -> None:
    with pytest.raises(AttachmentRefused) as refused:
        await store_blocks(blocks, LocalFolderStore(tmp_path), limits, providers, load_base64)

    assert all(needle in str(refused.value) for needle in needles), refused.value
    assert stored_files(tmp_path) == []


def test_media_types_are_read_from_the_bytes() -> None:
    webp = b"RIFF\x00\x00\x00\x00WEBPVP8 "
    samples = [png_of(100), b"\xff\xd8\xff\xe0", b"GIF87a", webp, pdf_of(), b"BM\x00"]
    assert [sniff_media_type(s) for s in samples] == [
        "image/png",
        "image/jpeg",
        "image/gif",
        "image/webp",
        "application/pdf",
        None,
    ]


def test_an_image_of_bytes_becomes_a_block_of_its_own_kind() -> None:
    assert Image(png_of(100), name="p.png").block().type == "image"
    document = Image(pdf_of()).block()
    assert document.type == "document"
    assert document.source.media_type == "application/pdf"  # type: ignore[union-attr]
