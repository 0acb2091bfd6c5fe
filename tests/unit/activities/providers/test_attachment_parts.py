"""Images and documents in each API's shape, as the fakes check them (the real APIs' rules):
Anthropic's image and document blocks, in user messages and tool results; the chat API's
`image_url` and `file` parts, a tool's image in the user message after its tool message."""

from __future__ import annotations

import base64

from turnkeeper.activities.providers.anthropic_provider import cache_breakpoints
from turnkeeper.activities.providers.openai_messages import to_chat_messages
from turnkeeper.activities.providers.provider import ModelRequest, estimate_input_tokens
from turnkeeper.contracts.attachments import Base64Source, DocumentBlock, ImageBlock
from turnkeeper.contracts.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock

from tests.fakes.anthropic_validation import find_request_problem
from tests.fakes.attachment_checks import attachment_bytes
from tests.fakes.openai_chat_validation import find_chat_problem
from tests.support.attachment_files import pdf_of, png_of

PNG, PDF = png_of(4096), pdf_of()


def b64(media_type: str, data: bytes) -> Base64Source:
    return Base64Source(media_type=media_type, data=base64.b64encode(data).decode())


MESSAGES = [
    Message(
        role="user",
        content=[
            TextBlock(text="What do these say?"),
            ImageBlock(source=b64("image/png", PNG), name="chart.png"),
            DocumentBlock(source=b64("application/pdf", PDF), name="invoice.pdf"),
        ],
    ),
    Message(role="assistant", content=[ToolUseBlock(id="t1", name="snapshot", input={})]),
    Message(
        role="user",
        content=[
            ToolResultBlock(
                tool_use_id="t1",
                content=[TextBlock(text="the screen"), ImageBlock(source=b64("image/png", PNG))],
            )
        ],
    ),
]


def test_anthropic_gets_image_and_document_blocks_with_the_bytes() -> None:
    request = ModelRequest(model="claude-sonnet-4-6", messages=MESSAGES, max_tokens=100)
    body = {"model": "claude-sonnet-4-6", "max_tokens": 100, **cache_breakpoints(request)}

    assert find_request_problem(body) is None
    assert attachment_bytes(body) == [PNG, PDF, PNG]
    document = body["messages"][0]["content"][2]
    assert document["type"] == "document" and document["title"] == "invoice.pdf"
    assert document["source"]["media_type"] == "application/pdf"


def test_the_chat_api_gets_parts_and_a_tools_image_follows_its_tool_message() -> None:
    chat = to_chat_messages("system", MESSAGES)
    body = {"model": "gpt-4.1", "messages": chat}

    assert find_chat_problem(body) is None
    assert attachment_bytes(body) == [PNG, PDF, PNG]
    assert [m["role"] for m in chat] == ["system", "user", "assistant", "tool", "user"]
    assert chat[3]["content"] == "the screen"
    assert [p["type"] for p in chat[1]["content"]] == ["text", "image_url", "file"]
    assert chat[4]["content"][0]["text"] == "image returned by tool call t1:"


def test_an_attachment_is_estimated_by_its_tokens_not_its_base64() -> None:
    big = png_of(300 * 1024)
    request = ModelRequest(
        model="m",
        messages=[Message(role="user", content=[ImageBlock(source=b64("image/png", big))])],
        max_tokens=10,
    )
    assert 1_600 <= estimate_input_tokens(request) < 1_700
