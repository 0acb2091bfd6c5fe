"""Image and document blocks as each provider's API takes them.

Anthropic's Messages API takes `image` and `document` blocks with a base64 source (a plain-text
document as a `text` source), in user messages and tool results alike. The OpenAI chat API takes
images as `image_url` parts holding a data URL and PDFs as `file` parts with `file_data`, in
user messages only: a tool message is text, so a tool's image follows it in a user message.
By the time a provider sees a block, its source holds the bytes (`activities/attachments`).
"""

from __future__ import annotations

import base64
from typing import Any

from turnkeeper.contracts.attachments import AttachmentBlock, Base64Source, ImageBlock


def anthropic_block(block: AttachmentBlock) -> dict[str, Any]:
    """The Messages API's `image` or `document` block."""
    source = _bytes_source(block)
    if isinstance(block, ImageBlock):
        return {"type": "image", "source": _anthropic_source(source)}
    if source.media_type == "text/plain":
        text = base64.b64decode(source.data).decode("utf-8", errors="replace")
        shaped: dict[str, Any] = {"type": "text", "media_type": "text/plain", "data": text}
    else:
        shaped = _anthropic_source(source)
    document: dict[str, Any] = {"type": "document", "source": shaped}
    if block.name:
        document["title"] = block.name
    return document


def openai_part(block: AttachmentBlock) -> dict[str, Any]:
    """The chat API's `image_url` or `file` content part."""
    source = _bytes_source(block)
    url = f"data:{source.media_type};base64,{source.data}"
    if isinstance(block, ImageBlock):
        return {"type": "image_url", "image_url": {"url": url}}
    return {"type": "file", "file": {"filename": block.name or "document.pdf", "file_data": url}}


def _anthropic_source(source: Base64Source) -> dict[str, Any]:
    return {"type": "base64", "media_type": source.media_type, "data": source.data}


def _bytes_source(block: AttachmentBlock) -> Base64Source:
    if not isinstance(block.source, Base64Source):
        # The model-call activity resolves every source first; one left over is our defect.
        raise TypeError(f"a {block.source.type} source reached the provider unresolved")
    return block.source
