"""Our conversation (Anthropic-style content blocks, the contract's shape) as Chat Completions
messages, and a Chat Completions answer back as content blocks.

The conversation is always stored in our own shape, so a turn can move between providers at any
model call: a fallback continues a conversation the other provider started. Going out, tool
results become `tool` messages right after the assistant message that called them (Chat
Completions requires that order), and a result the tool marked as an error says so in its text,
the only place Chat Completions has for it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from turnkeeper.contracts.messages import (
    ContentBlock,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from turnkeeper.contracts.tools import ToolDefinition

ChatMessage = dict[str, Any]
TOOL_ERROR_PREFIX = "[tool error] "


class MalformedAnswer(ValueError):
    """A 200 whose message cannot be read as an answer (e.g. tool arguments that are not JSON)."""


def to_chat_messages(system: str, messages: Sequence[Message]) -> list[ChatMessage]:
    chat: list[ChatMessage] = [{"role": "system", "content": system}] if system else []
    for message in messages:
        if message.role == "assistant":
            chat.append(_assistant_message(message))
        else:
            chat.extend(_user_messages(message))
    return chat


def to_chat_tools(tools: Sequence[ToolDefinition]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.input_schema,
            },
        }
        for tool in tools
    ]


def _assistant_message(message: Message) -> ChatMessage:
    chat: ChatMessage = {"role": "assistant", "content": message.text() or None}
    calls = [
        {
            "id": use.id,
            "type": "function",
            "function": {"name": use.name, "arguments": json.dumps(use.input)},
        }
        for use in message.tool_uses()
    ]
    if calls:
        chat["tool_calls"] = calls
    return chat


def _user_messages(message: Message) -> list[ChatMessage]:
    results = [block for block in message.content if isinstance(block, ToolResultBlock)]
    texts = [block.text for block in message.content if isinstance(block, TextBlock)]
    chat: list[ChatMessage] = [
        {"role": "tool", "tool_call_id": result.tool_use_id, "content": _result_text(result)}
        for result in results
    ]
    if texts:
        content: str | list[dict[str, str]] = (
            texts[0] if len(texts) == 1 else [{"type": "text", "text": t} for t in texts]
        )
        chat.append({"role": "user", "content": content})
    return chat


def _result_text(result: ToolResultBlock) -> str:
    return f"{TOOL_ERROR_PREFIX}{result.text()}" if result.is_error else result.text()


def from_chat_message(content: str | None, tool_calls: Sequence[Any] | None) -> list[ContentBlock]:
    """The answer's text and function calls as content blocks, text first (as Anthropic orders
    them). Raises `MalformedAnswer` for arguments that are not a JSON object."""
    blocks: list[ContentBlock] = [TextBlock(text=content)] if content else []
    for call in tool_calls or []:
        function = getattr(call, "function", None)
        if function is None:
            raise MalformedAnswer(f"tool call {getattr(call, 'id', '?')!r} is not a function call")
        blocks.append(
            ToolUseBlock(id=call.id, name=function.name, input=_arguments(call.id, function))
        )
    return blocks


def _arguments(call_id: str, function: Any) -> dict[str, Any]:
    raw = function.arguments or "{}"
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as err:
        raise MalformedAnswer(
            f"the arguments of tool call {call_id!r} ({function.name}) are not JSON ({err.msg})"
        ) from err
    if not isinstance(value, dict):
        raise MalformedAnswer(
            f"the arguments of tool call {call_id!r} ({function.name}) are not a JSON object"
        )
    return value
