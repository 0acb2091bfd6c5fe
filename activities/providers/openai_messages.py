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

from turnkeeper.activities.providers.attachment_parts import openai_part
from turnkeeper.contracts.attachments import DocumentBlock, ImageBlock
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
_EPHEMERAL = {"type": "ephemeral"}


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


def with_cache_breakpoints(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    """Chat messages with Anthropic's prompt-cache breakpoints (`cache_control` on a content
    part), as gateways in front of Claude models accept and forward them: after the system
    prompt, on the newest message, and on the newest message of the previous call (the one
    before the last answer), so that each call reads the prefix the previous one wrote. With
    the mark on the tools (`with_cached_tools`) that is the API's limit of four."""
    marked = list(messages)
    targets = {len(marked) - 1} if marked else set()
    if marked and marked[0]["role"] == "system":
        targets.add(0)
    answers = [i for i, message in enumerate(marked) if message["role"] == "assistant"]
    if answers and answers[-1] > 0:
        targets.add(answers[-1] - 1)
    for index in targets:
        marked[index] = _with_breakpoint(marked[index])
    return marked


def with_cached_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tools with a cache breakpoint after the last one (the prefix every call shares)."""
    return [*tools[:-1], {**tools[-1], "cache_control": _EPHEMERAL}] if tools else tools


def _with_breakpoint(message: ChatMessage) -> ChatMessage:
    content = message.get("content")
    if isinstance(content, str) and content:
        parts: list[Any] = [{"type": "text", "text": content}]
    elif isinstance(content, list) and content:
        parts = list(content)
    else:
        return message  # an answer that only calls tools: nothing to mark
    parts[-1] = {**parts[-1], "cache_control": _EPHEMERAL}
    return {**message, "content": parts}


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
    chat: list[ChatMessage] = [
        {"role": "tool", "tool_call_id": result.tool_use_id, "content": _result_text(result)}
        for result in results
    ]
    parts: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextBlock):
            parts.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageBlock | DocumentBlock):
            parts.append(openai_part(block))
    # A tool message holds text only: a tool's images follow in the user message, each after
    # a line that says which call returned it.
    for result in results:
        for part in result.content if isinstance(result.content, list) else []:
            if isinstance(part, ImageBlock | DocumentBlock):
                said = f"{part.type} returned by tool call {result.tool_use_id}:"
                parts += [{"type": "text", "text": said}, openai_part(part)]
    if len(parts) == 1 and parts[0]["type"] == "text":
        chat.append({"role": "user", "content": parts[0]["text"]})
    elif parts:
        chat.append({"role": "user", "content": parts})
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
