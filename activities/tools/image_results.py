"""A tool's images and PDFs (`turnkeeper.Image`, `read_file` on an image): stored in the content
store like a request's attachments, so that the tool result names them by reference.

A tool may return an `Image`, or a list of text and `Image`s. The text parts become the result's
text; each image is checked (its type read from its bytes: an image or a PDF, which every
provider takes; the operator's size limits) and stored. An image that does not fit becomes the
call's error, which the model reads, rather than a failed turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from turnkeeper.contracts.attachments import AttachmentBlock, AttachmentLimits, Image

from turnkeeper.payloads.attachments import load_base64, store_blocks
from turnkeeper.payloads.content_store import ContentStore

# What every provider takes (images and PDFs): a tool does not know which model reads it.
_ANY_PROVIDER = {"openai", "anthropic"}

ToolOutput = str | list[str | Image]
"""A tool's result: its text, or text and images in order."""


def output_of(value: Any, as_text: Any) -> ToolOutput:
    """A tool's return value as its output: images kept, everything else as text."""
    if isinstance(value, Image):
        return [value]
    if isinstance(value, list | tuple) and any(isinstance(item, Image) for item in value):
        return [item if isinstance(item, str | Image) else as_text(item) for item in value]
    return as_text(value)


async def stored_images(
    output: Sequence[str | Image], store: ContentStore, limits: AttachmentLimits
) -> tuple[str, list[AttachmentBlock]]:
    """The output's text (its text parts joined) and its images, stored.

    Raises:
        AttachmentRefused: An image is of a type no provider takes, or over a size limit.
    """
    text = "\n".join(part for part in output if isinstance(part, str))
    images = [part.block() for part in output if isinstance(part, Image)]
    return text, await store_blocks(images, store, limits, _ANY_PROVIDER, load_base64)
