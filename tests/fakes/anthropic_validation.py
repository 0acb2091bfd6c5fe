"""The request checks the real Messages API makes, as far as they catch runtime bugs.

Each check returns the first problem as one sentence in the API's style ("messages.2: …"), or
None. The fake answers a problem with 400 `invalid_request_error`, as the API would.
"""

from __future__ import annotations

from typing import Any

from tests.fakes.anthropic_cache import MAX_BREAKPOINTS, count_breakpoints
from tests.fakes.anthropic_replies import JsonDict
from tests.fakes.attachment_checks import anthropic_attachment_problem

_USER_BLOCKS = frozenset({"text", "image", "document", "tool_result"})
_RESULT_BLOCKS = frozenset({"text", "image", "document"})
_ASSISTANT_BLOCKS = frozenset({"text", "tool_use", "thinking", "redacted_thinking"})


def find_request_problem(body: JsonDict) -> str | None:
    """The first reason the API would refuse this `POST /v1/messages` body, or None."""
    return (
        _check_model_and_max_tokens(body)
        or _check_system(body.get("system"))
        or _check_tools(body.get("tools"))
        or check_messages(body.get("messages"))
        or _check_tool_pairing(body["messages"])
        or _check_cache_breakpoints(body)
    )


def _check_cache_breakpoints(body: JsonDict) -> str | None:
    found = count_breakpoints(body)
    if found > MAX_BREAKPOINTS:
        return (
            f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. "
            f"Found {found}."
        )
    return None


def check_messages(messages: Any) -> str | None:
    """Messages are a non-empty list alternating user/assistant, starting with user."""
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required"
    for index, message in enumerate(messages):
        problem = _check_message(index, message, is_last=index == len(messages) - 1)
        if problem:
            return problem
    return None


def _check_model_and_max_tokens(body: JsonDict) -> str | None:
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "model: Field required"
    max_tokens = body.get("max_tokens")
    if max_tokens is None:
        return "max_tokens: Field required"
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        return f"max_tokens: must be an integer of at least 1, got {max_tokens!r}"
    return None


def _check_system(system: Any) -> str | None:
    if system is None or isinstance(system, str):
        return None
    if not isinstance(system, list):
        return "system: must be a string or a list of text blocks"
    for index, block in enumerate(system):
        if not isinstance(block, dict) or block.get("type") != "text":
            return f"system.{index}: must be a text block"
        if not isinstance(block.get("text"), str) or not block["text"]:
            return f"system.{index}: text content blocks must be non-empty"
    return None


def _check_tools(tools: Any) -> str | None:
    if tools is None:
        return None
    if not isinstance(tools, list):
        return "tools: must be a list"
    seen: set[str] = set()
    for index, tool in enumerate(tools):
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            return f"tools.{index}.name: Field required"
        if tool["name"] in seen:
            return f"tools: tool names must be unique, {tool['name']!r} is repeated"
        seen.add(tool["name"])
        schema = tool.get("input_schema")
        if not isinstance(schema, dict) or schema.get("type") != "object":
            return f"tools.{index}.input_schema: must be a JSON schema of type 'object'"
    return None


def _check_message(index: int, message: Any, *, is_last: bool) -> str | None:
    if not isinstance(message, dict):
        return f"messages.{index}: must be an object"
    role = message.get("role")
    expected = "user" if index % 2 == 0 else "assistant"
    if role != expected:
        return (
            f"messages.{index}.role: roles must alternate between user and assistant, "
            f"starting with user; expected {expected!r}, got {role!r}"
        )
    content = message.get("content")
    if isinstance(content, str):
        return None if content or (is_last and role == "assistant") else _empty(index)
    if not isinstance(content, list):
        return f"messages.{index}.content: must be a string or a list of content blocks"
    if not content and not (is_last and role == "assistant"):
        return _empty(index)
    allowed = _USER_BLOCKS if role == "user" else _ASSISTANT_BLOCKS
    for block_index, block in enumerate(content):
        problem = _check_block(f"messages.{index}.content.{block_index}", block, allowed)
        if problem:
            return problem
    return None


def _check_block(where: str, block: Any, allowed: frozenset[str]) -> str | None:
    if not isinstance(block, dict) or block.get("type") not in allowed:
        kind = block.get("type") if isinstance(block, dict) else type(block).__name__
        return f"{where}: a block of type {kind!r} is not allowed here"
    kind = block["type"]
    if kind == "text" and (not isinstance(block.get("text"), str) or not block["text"]):
        return f"{where}: text content blocks must be non-empty"
    if kind == "tool_use":
        if not block.get("id") or not block.get("name"):
            return f"{where}: tool_use blocks need an id and a name"
        if not isinstance(block.get("input"), dict):
            return f"{where}.input: must be an object"
    if kind in ("image", "document"):
        return anthropic_attachment_problem(where, block)
    if kind == "tool_result":
        if not block.get("tool_use_id"):
            return f"{where}.tool_use_id: Field required"
        return _check_result_content(where, block.get("content"))
    return None


def _check_result_content(where: str, content: Any) -> str | None:
    """A tool result holds a string, or text, image and document blocks."""
    if content is None or isinstance(content, str):
        return None
    for index, part in enumerate(content if isinstance(content, list) else [content]):
        problem = _check_block(f"{where}.content.{index}", part, _RESULT_BLOCKS)
        if problem:
            return problem
    return None


def _check_tool_pairing(messages: list[JsonDict]) -> str | None:
    """Every tool_use is answered by exactly one tool_result, first in the next message."""
    seen_ids: set[str] = set()
    for index, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        uses = [block["id"] for block in _blocks(message) if block["type"] == "tool_use"]
        repeated = sorted(seen_ids.intersection(uses) | {i for i in uses if uses.count(i) > 1})
        if repeated:
            return f"messages.{index}: tool_use ids must be unique, repeated: {repeated}"
        seen_ids.update(uses)
        following = messages[index + 1] if index + 1 < len(messages) else None
        problem = _check_answers(index, uses, following)
        if problem:
            return problem
    return _check_orphan_results(messages)


def _check_answers(index: int, uses: list[str], following: JsonDict | None) -> str | None:
    blocks = _blocks(following) if following else []
    results = [block["tool_use_id"] for block in blocks if block["type"] == "tool_result"]
    missing = [use for use in uses if use not in results]
    if missing:
        return (
            f"messages.{index + 1}: tool_use ids were found without tool_result blocks "
            f"immediately after: {missing}"
        )
    twice = sorted({result for result in results if results.count(result) > 1})
    if twice:
        return f"messages.{index + 1}: each tool_use needs exactly one tool_result, got {twice}"
    unknown = [result for result in results if result not in uses]
    if unknown:
        return (
            f"messages.{index + 1}: tool_result blocks refer to tool_use ids {unknown} "
            f"that are not in the previous message"
        )
    first_non_result = next(
        (i for i, block in enumerate(blocks) if block["type"] != "tool_result"), len(blocks)
    )
    if results and len(results) > first_non_result:
        return f"messages.{index + 1}: tool_result blocks must come first in the content"
    return None


def _check_orphan_results(messages: list[JsonDict]) -> str | None:
    # A tool_result in the first message has no tool_use before it at all.
    first = [block for block in _blocks(messages[0]) if block["type"] == "tool_result"]
    if first:
        return "messages.0: tool_result blocks need a tool_use in the previous message"
    return None


def _empty(index: int) -> str:
    return (
        f"messages.{index}: all messages must have non-empty content "
        "except for the optional final assistant message"
    )


def _blocks(message: JsonDict) -> list[JsonDict]:
    content = message.get("content")
    return content if isinstance(content, list) else []
