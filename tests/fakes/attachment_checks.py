"""What the real APIs check of an image or a document, and what they bill for one.

Anthropic's Messages API takes `image` blocks with a base64 source of PNG, JPEG, GIF or WebP
(5 MiB of base64 at most) and `document` blocks with a base64 PDF or a plain-text source; the
OpenAI chat API takes `image_url` parts with a data URL and `file` parts with `file_data`, in
user messages only. Both refuse bytes that are not what their media type says. The fakes answer
a problem with 400 `invalid_request_error`, as the APIs do, and keep every request so that a
test can compare the bytes received with the file it sent.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
import struct
from typing import Any

JsonDict = dict[str, Any]

IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
MAX_IMAGE_BASE64 = 5 * 1024 * 1024
# Anthropic: about width x height / 750 tokens, images scaled down to about 1,600 tokens.
MAX_IMAGE_TOKENS = 1_600
PDF_TOKENS_PER_PAGE = 1_500
_MAGIC = {
    "image/png": b"\x89PNG\r\n\x1a\n",
    "image/jpeg": b"\xff\xd8\xff",
    "image/gif": b"GIF8",
    "image/webp": b"RIFF",
    "application/pdf": b"%PDF-",
}
_DATA_URL = re.compile(r"data:(?P<type>[\w/.+-]+);base64,(?P<data>.*)", re.DOTALL)


def anthropic_attachment_problem(where: str, block: JsonDict) -> str | None:
    """Why the Messages API would refuse this `image` or `document` block, or None."""
    source = block.get("source")
    if not isinstance(source, dict):
        return f"{where}.source: Field required"
    if block["type"] == "document" and source.get("type") == "text":
        ok = source.get("media_type") == "text/plain" and isinstance(source.get("data"), str)
        return None if ok else f"{where}.source: a text source needs media_type text/plain"
    if source.get("type") != "base64":
        return f"{where}.source.type: expected 'base64', got {source.get('type')!r}"
    accepted = IMAGE_TYPES if block["type"] == "image" else frozenset({"application/pdf"})
    return _bytes_problem(f"{where}.source", source.get("media_type"), source.get("data"), accepted)


def openai_part_problem(where: str, part: Any) -> str | None:
    """Why the chat API would refuse this user content part, or None."""
    kind = part.get("type") if isinstance(part, dict) else None
    if kind == "text":
        return None if isinstance(part.get("text"), str) else f"{where}.text: required"
    if kind == "image_url":
        url = (part.get("image_url") or {}).get("url", "")
        return _data_url_problem(f"{where}.image_url.url", url, IMAGE_TYPES)
    if kind == "file":
        data = (part.get("file") or {}).get("file_data", "")
        return _data_url_problem(f"{where}.file.file_data", data, frozenset({"application/pdf"}))
    return f"{where}.type: {kind!r} is not a valid content part type"


def attachment_bytes(body: JsonDict) -> list[bytes]:
    """The bytes of every image and document a request carries, in order (both APIs)."""
    found: list[bytes] = []
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            nested = block.get("content") if block.get("type") == "tool_result" else None
            for part in nested if isinstance(nested, list) else [block]:
                data = _part_data(part)
                if data is not None:
                    found.append(base64.b64decode(data))
    return found


def attachment_tokens(block: JsonDict) -> int:
    """What Anthropic bills for an image or document block (0 for other blocks)."""
    source = block.get("source") if block.get("type") in ("image", "document") else None
    if not isinstance(source, dict):
        return 0
    if source.get("type") == "text":
        return len(source.get("data", "")) // 4
    data = base64.b64decode(source.get("data", ""))
    if block["type"] == "document":
        return PDF_TOKENS_PER_PAGE * max(1, len(re.findall(rb"/Type\s*/Page\b", data)))
    if data.startswith(_MAGIC["image/png"]) and len(data) >= 24:
        width, height = struct.unpack(">II", data[16:24])
        return min(MAX_IMAGE_TOKENS, max(1, width * height // 750))
    return MAX_IMAGE_TOKENS


def openai_attachment_usage(messages: Any) -> tuple[int, int]:
    """(characters of data URLs, tokens they bill) over chat messages: OpenAI bills an image
    85 tokens plus 170 per 512-pixel tile once scaled into 2048 x 2048 with its short side at
    most 768, and a PDF by its pages (as Anthropic does, for the fake)."""
    chars = tokens = 0
    for message in messages if isinstance(messages, list) else []:
        content = message.get("content") if isinstance(message, dict) else None
        for part in content if isinstance(content, list) else []:
            data = _part_data(part)
            if data is None:
                continue
            chars += len(json.dumps(part))
            raw = base64.b64decode(data)
            if part.get("type") == "file":
                tokens += PDF_TOKENS_PER_PAGE * max(1, len(re.findall(rb"/Type\s*/Page\b", raw)))
            else:
                tokens += _openai_image_tokens(raw)
    return chars, tokens


def _openai_image_tokens(raw: bytes) -> int:
    width, height = (1024, 1024)
    if raw.startswith(_MAGIC["image/png"]) and len(raw) >= 24:
        width, height = struct.unpack(">II", raw[16:24])
    scale = min(1.0, 2048 / max(width, height))
    width, height = width * scale, height * scale
    scale = min(1.0, 768 / min(width, height))
    tiles = math.ceil(width * scale / 512) * math.ceil(height * scale / 512)
    return 85 + 170 * tiles


def _part_data(part: Any) -> str | None:
    if not isinstance(part, dict):
        return None
    if part.get("type") in ("image", "document"):
        source = part.get("source") or {}
        return source.get("data") if source.get("type") == "base64" else None
    url = (part.get("image_url") or {}).get("url") or (part.get("file") or {}).get("file_data")
    match = _DATA_URL.fullmatch(url or "")
    return match["data"] if match else None


def _data_url_problem(where: str, url: Any, accepted: frozenset[str]) -> str | None:
    match = _DATA_URL.fullmatch(url) if isinstance(url, str) else None
    if match is None:
        return f"{where}: expected a base64 data URL"
    return _bytes_problem(where, match["type"], match["data"], accepted)


def _bytes_problem(where: str, media_type: Any, data: Any, accepted: frozenset[str]) -> str | None:
    if media_type not in accepted:
        return f"{where}.media_type: must be one of {sorted(accepted)}, got {media_type!r}"
    if not isinstance(data, str) or not data:
        return f"{where}.data: Field required"
    if media_type in IMAGE_TYPES and len(data) > MAX_IMAGE_BASE64:
        return f"{where}: image exceeds 5 MB maximum: {len(data)} bytes > {MAX_IMAGE_BASE64} bytes"
    try:
        raw = base64.b64decode(data, validate=True)
    except binascii.Error:
        return f"{where}.data: invalid base64 data"
    if not raw.startswith(_MAGIC[media_type]):
        return f"{where}: the data is not a valid {media_type} (could not process image)"
    return None
