"""The model requests the provider tests send: a scripted key names the fake server's script
(`[script:KEY]` in the system prompt), so that each test reads back only its own requests."""

from __future__ import annotations

import uuid

from turnkeeper.activities.providers.provider import ModelRequest
from turnkeeper.contracts.messages import Message
from turnkeeper.contracts.tools import ToolDefinition

MODEL = "gpt-test-1"
READ = ToolDefinition(
    name="read_file",
    description="Read a file",
    input_schema={"type": "object", "properties": {"path": {"type": "string"}}},
)


def request_for(key: str, messages: list[Message] | None = None) -> ModelRequest:
    return ModelRequest(
        model=MODEL,
        system=f"You are a test. [script:{key}]",
        messages=messages or [Message(role="user", content="Read a.md and b.md")],
        tools=[READ],
        max_tokens=256,
    )


def new_key() -> str:
    return f"oa-{uuid.uuid4().hex[:8]}"
