"""An MCP `CallToolResult` as the text of a `tool_result` block.

Text content is passed as it is, except that text holding a JSON object or array is made compact
(servers often pretty-print; indentation is paid for in tokens on every later model call).
Structured content is used, as compact JSON, only when the result has no text: by the MCP spec a
tool with structured output also returns its JSON as text, and text is what its author meant the
model to read (`add` answers `3`, not `{"result":3}`). Images, audio and binary resources cannot
be put into a text-only `tool_result` block: each is replaced by a sentence saying so, and a
result with nothing else becomes an `is_error` result, so the model knows it saw nothing.
"""

from __future__ import annotations

import json
from typing import Any

from mcp.types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
)


def result_text(tool: str, result: CallToolResult) -> tuple[str, bool]:
    """The text of `result` and whether it is an error result."""
    texts: list[str] = []
    refused: list[str] = []
    for block in result.content:
        text = _block_text(block)
        if text is None:
            refused.append(_refusal(tool, block))
        else:
            texts.append(text)
    if not texts and result.structured_content is not None:
        texts.append(compact_json(result.structured_content))
    if not texts and refused:
        return "\n".join(refused), True
    return "\n".join(texts + refused), result.is_error


def compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _block_text(block: object) -> str | None:
    """The text of one content block; None for content that is not text."""
    if isinstance(block, TextContent):
        return _compacted(block.text)
    if isinstance(block, EmbeddedResource):
        resource = block.resource
        return None if isinstance(resource, BlobResourceContents) else _compacted(resource.text)
    if isinstance(block, ResourceLink):
        return f"[resource {block.uri}" + (f" ({block.name})]" if block.name else "]")
    return None


def _refusal(tool: str, block: object) -> str:
    if isinstance(block, ImageContent | AudioContent):
        kind = f"{block.type} ({block.mime_type})"
    elif isinstance(block, EmbeddedResource):
        kind = f"binary resource {block.resource.uri}"
    else:
        kind = f"{getattr(block, 'type', type(block).__name__)} content"
    return f"[MCP tool {tool!r} returned {kind}, which cannot be shown to the model]"


def _compacted(text: str) -> str:
    stripped = text.strip()
    if not stripped.startswith(("{", "[")):
        return text
    try:
        return compact_json(json.loads(stripped))
    except ValueError:
        return text
