"""Images and documents in a turn: the content blocks that carry them, and the limits they meet.

A block names its bytes by a `source`. Callers may give the bytes (`base64`), a file their client
reads (`path`) or an address the worker fetches (`url`, only for hosts the operator allows); the
client, or the worker on first sight, puts the bytes in the content store and the block then holds
a `stored` source: the content reference, media type and size. History, the conversation chain and
reports keep that reference only; the model-call activity reads the bytes back for the provider.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Final, Literal

from pydantic import ConfigDict, Field
from turnkeeper.contracts.contract_model import ContractModel

MAX_BYTES_ENV: Final = "TURNKEEPER_ATTACHMENT_MAX_BYTES"
MAX_TURN_BYTES_ENV: Final = "TURNKEEPER_ATTACHMENT_MAX_TURN_BYTES"
URL_HOSTS_ENV: Final = "TURNKEEPER_ATTACHMENT_URL_HOSTS"
# Anthropic refuses an image whose base64 exceeds 5 MiB, so 3.75 MiB of bytes; a request may
# hold 32 MB in all, and 20 MiB of bytes is 26.7 MiB of base64, with room for the conversation.
DEFAULT_MAX_BYTES: Final = 5 * 1024 * 1024 * 3 // 4
DEFAULT_MAX_TURN_BYTES: Final = 20 * 1024 * 1024

IMAGE_TYPES: Final = ("image/png", "image/jpeg", "image/gif", "image/webp")
PDF: Final = "application/pdf"
# What each kind of provider accepts (Anthropic's image and document blocks, the OpenAI chat
# API's `image_url` and `file` parts); the demo provider takes what Anthropic takes.
ACCEPTED_TYPES: Final[dict[str, frozenset[str]]] = {
    "anthropic": frozenset({*IMAGE_TYPES, PDF, "text/plain"}),
    "openai": frozenset({*IMAGE_TYPES, PDF}),
}


class Base64Source(ContractModel):
    """The bytes themselves, in base64 (standard alphabet, padded)."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["base64"] = "base64"
    """Tells the kinds of source apart."""
    media_type: str = Field(min_length=1)
    """The bytes' media type, e.g. `image/png`."""
    data: str = Field(min_length=1)
    """The bytes in base64."""

    def decoded(self) -> bytes:
        """The bytes.

        Raises:
            ValueError: `data` is not base64.
        """
        try:
            return base64.b64decode(self.data, validate=True)
        except binascii.Error as err:
            raise ValueError(f"source.data is not base64: {err}") from None


class PathSource(ContractModel):
    """A file the caller's client reads (the CLI, the library); a worker never reads it."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["path"] = "path"
    """Tells the kinds of source apart."""
    path: str = Field(min_length=1)
    """The file, on the caller's machine."""


class UrlSource(ContractModel):
    """An address the worker fetches, only when its host is one `TURNKEEPER_ATTACHMENT_URL_HOSTS`
    lists."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["url"] = "url"
    """Tells the kinds of source apart."""
    url: str = Field(pattern=r"^https?://")
    """An `http` or `https` address."""


class StoredSource(ContractModel):
    """Bytes already in the content store: what history holds instead of them."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["stored"] = "stored"
    """Tells the kinds of source apart."""
    ref: str = Field(min_length=1)
    """The content reference (`sha256:…`), the DIGEST of `turnkeeper attachment get`."""
    media_type: str = Field(min_length=1)
    """The bytes' media type."""
    size: int = Field(ge=0)
    """The bytes' length."""


Source = Annotated[
    Base64Source | PathSource | UrlSource | StoredSource, Field(discriminator="type")
]


class _AttachmentBlock(ContractModel):
    """What image and document blocks share: a source, and a name for people."""

    model_config = ConfigDict(extra="forbid")
    source: Source
    """Where the bytes are."""
    name: str | None = None
    """The file's name, shown in transcripts and the inbox (never sent to the model)."""

    def label(self, index: int) -> str:
        """How a message names the block: its name, or its place."""
        return repr(self.name) if self.name else f"attachment {index}"

    def summary(self) -> str:
        """`name · media type · size · digest`, as transcripts and the inbox show it."""
        source = self.source
        name = self.name or "(unnamed)"
        if isinstance(source, StoredSource):
            return f"{name} · {source.media_type} · {_size(source.size)} · {source.ref}"
        if isinstance(source, Base64Source):
            return f"{name} · {source.media_type} · {_size(len(source.data) * 3 // 4)}"
        return f"{name} · {source.type} {getattr(source, 'url', getattr(source, 'path', ''))}"


class ImageBlock(_AttachmentBlock):
    """An image (PNG, JPEG, GIF or WebP) in a user message or a tool result."""

    type: Literal["image"] = "image"
    """Tells the kinds of block apart."""


class DocumentBlock(_AttachmentBlock):
    """A document (PDF; plain text for Anthropic models) in a user message or a tool result."""

    type: Literal["document"] = "document"
    """Tells the kinds of block apart."""


AttachmentBlock = ImageBlock | DocumentBlock


def block_for(
    media_type: str, source: StoredSource | Base64Source, name: str | None
) -> AttachmentBlock:
    """An image block for an image type, else a document block."""
    if media_type.startswith("image/"):
        return ImageBlock(source=source, name=name)
    return DocumentBlock(source=source, name=name)


def sniff_media_type(data: bytes) -> str | None:
    """The media type the bytes' first bytes announce, of those providers take; None: none of
    them. Read from the bytes, not a file's name, so a renamed file is still told apart."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data.startswith(b"%PDF-"):
        return PDF
    return None


@dataclass(frozen=True)
class Image:
    """An image (or a PDF) given by its bytes (`turnkeeper.Image`): in `start_turn(…,
    attachments=[…])`, or returned by a tool, alone or in a list with text.

    Args:
        data: The bytes.
        media_type: e.g. `image/png`; None: read from the bytes.
        name: Shown in transcripts and the inbox; never sent to the model.
    """

    data: bytes
    media_type: str | None = None
    name: str | None = None

    def block(self) -> AttachmentBlock:
        """The block that carries it until it is stored."""
        media_type = self.media_type or sniff_media_type(self.data) or "application/octet-stream"
        source = Base64Source(media_type=media_type, data=base64.b64encode(self.data).decode())
        return block_for(media_type, source, self.name)


class AttachmentLimits(ContractModel):
    """The operator's limits (`TURNKEEPER_ATTACHMENT_MAX_BYTES`,
    `TURNKEEPER_ATTACHMENT_MAX_TURN_BYTES`), checked before anything is stored or sent."""

    max_bytes: int = Field(default=DEFAULT_MAX_BYTES, ge=1)
    """The largest attachment, in bytes."""
    max_turn_bytes: int = Field(default=DEFAULT_MAX_TURN_BYTES, ge=1)
    """All of a turn's attachments together, in bytes."""

    def problem(self, label: str, media_type: str, size: int, providers: set[str]) -> str | None:
        """Why one attachment is refused, naming it and the limit; None: it fits."""
        for provider in sorted(providers):
            accepted = ACCEPTED_TYPES.get(provider, ACCEPTED_TYPES["anthropic"])
            if media_type not in accepted:
                return (
                    f"{label} is {media_type}, which {provider} models do not take "
                    f"(they take {', '.join(sorted(accepted))})"
                )
        if size > self.max_bytes:
            return (
                f"{label} is {size} bytes, over the {self.max_bytes}-byte limit of one "
                f"attachment ({MAX_BYTES_ENV})"
            )
        return None

    def turn_problem(self, total: int) -> str | None:
        """Why a turn's attachments together are refused; None: they fit."""
        if total > self.max_turn_bytes:
            return (
                f"the attachments are {total} bytes together, over the {self.max_turn_bytes}-byte "
                f"limit of one turn ({MAX_TURN_BYTES_ENV})"
            )
        return None


# Anthropic bills an image at about width x height / 750 tokens and scales larger ones down to
# about 1,600 tokens; a PDF page costs its text plus its image, a few thousand tokens. Before a
# call, only these ceilings are known (the answer's usage then says what was billed).
IMAGE_TOKENS: Final = 1_600
PDF_TOKENS_PER_100_KIB: Final = 3_000


def attachment_tokens(media_type: str, size: int) -> int:
    """A ceiling on the input tokens an attachment of `size` bytes bills, for budget checks."""
    if media_type.startswith("image/"):
        return IMAGE_TOKENS
    if media_type == PDF:
        return PDF_TOKENS_PER_100_KIB * (1 + size // (100 * 1024))
    return size // 4 + 1


def attachment_blocks(messages: Sequence[Any]) -> Iterator[AttachmentBlock]:
    """Every image and document block of `messages`, in user messages and tool results."""
    for message in messages:
        for block in message.content:
            parts = getattr(block, "content", None)
            for part in parts if isinstance(parts, list) else [block]:
                if isinstance(part, ImageBlock | DocumentBlock):
                    yield part


def attachment_data(messages: Sequence[Any]) -> Iterator[tuple[str, str]]:
    """The base64 data and media type of every attachment given by value in `messages`."""
    for block in attachment_blocks(messages):
        if isinstance(block.source, Base64Source):
            yield block.source.data, block.source.media_type


def _size(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KiB"
    return f"{size / 1024 / 1024:.1f} MiB"


def provider_kinds(models: Sequence[str]) -> set[str]:
    """The kinds of API the `provider:model`s speak, as far as a request tells: `openai` for
    `openai:`, else `anthropic`. A named endpoint of another kind is checked by the worker's
    model call, which knows its provider."""
    return {"openai" if model.startswith("openai:") else "anthropic" for model in models}
