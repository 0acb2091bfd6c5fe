"""Anthropic-style messages as OpenInference message attributes, for spans that may carry
contents (`TURNKEEPER_TRACE_CONTENT=1`)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from openinference.semconv.trace import MessageAttributes, ToolCallAttributes
from opentelemetry.util.types import AttributeValue
from turnkeeper.contracts.messages import ContentBlock, TextBlock, ToolResultBlock, ToolUseBlock

FlatMessage = dict[str, AttributeValue]


def openinference_messages(role: str, blocks: Sequence[ContentBlock]) -> list[FlatMessage]:
    """One message as OpenInference messages. Anthropic carries tool results inside a user
    message; OpenInference gives each its own message of role "tool"."""
    messages: list[FlatMessage] = []
    text = "".join(block.text for block in blocks if isinstance(block, TextBlock))
    uses = [block for block in blocks if isinstance(block, ToolUseBlock)]
    if text or uses:
        message: FlatMessage = {MessageAttributes.MESSAGE_ROLE: role}
        if text:
            message[MessageAttributes.MESSAGE_CONTENT] = text
        for j, use in enumerate(uses):
            prefix = f"{MessageAttributes.MESSAGE_TOOL_CALLS}.{j}."
            message[prefix + ToolCallAttributes.TOOL_CALL_ID] = use.id
            message[prefix + ToolCallAttributes.TOOL_CALL_FUNCTION_NAME] = use.name
            message[prefix + ToolCallAttributes.TOOL_CALL_FUNCTION_ARGUMENTS_JSON] = json.dumps(
                use.input, ensure_ascii=False
            )
        messages.append(message)
    for block in blocks:
        if isinstance(block, ToolResultBlock):
            messages.append(
                {
                    MessageAttributes.MESSAGE_ROLE: "tool",
                    MessageAttributes.MESSAGE_TOOL_CALL_ID: block.tool_use_id,
                    MessageAttributes.MESSAGE_CONTENT: block.text(),
                }
            )
    return messages


def indexed(
    prefix: str, messages: Sequence[FlatMessage], start: int = 0
) -> dict[str, AttributeValue]:
    """`llm.input_messages.3.message.role` and friends, numbering from `start`."""
    return {
        f"{prefix}.{start + i}.{key}": value
        for i, message in enumerate(messages)
        for key, value in message.items()
    }
