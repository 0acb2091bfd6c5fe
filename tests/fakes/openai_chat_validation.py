"""The request checks the real Chat Completions API makes, as far as they catch runtime bugs:
above all that every function call of an assistant message is answered by a `tool` message
before the conversation goes on, and that no `tool` message answers a call nobody made."""

from __future__ import annotations

from typing import Any

from tests.fakes.anthropic_replies import JsonDict
from tests.fakes.attachment_checks import openai_part_problem

_ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})


def find_chat_problem(body: JsonDict) -> str | None:
    """The first reason the API would refuse this body (one sentence), or None."""
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "you must provide a model parameter"
    return _check_tools(body.get("tools")) or _check_messages(body.get("messages"))


def _check_tools(tools: Any) -> str | None:
    if tools is None:
        return None
    if not isinstance(tools, list) or not tools:
        return "tools: must be a non-empty array"
    for index, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict) or tool.get("type") != "function":
            return f"tools[{index}]: must be a function tool"
        if not isinstance(function.get("name"), str):
            return f"tools[{index}].function.name: required"
        parameters = function.get("parameters")
        if parameters is not None and not isinstance(parameters, dict):
            return f"tools[{index}].function.parameters: must be an object"
    return None


def _check_messages(messages: Any) -> str | None:
    if not isinstance(messages, list) or not messages:
        return "messages: must be a non-empty array"
    unanswered: list[str] = []
    for index, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in _ROLES:
            return f"messages[{index}].role: must be one of {sorted(_ROLES)}"
        problem = _check_content(index, role, message.get("content"))
        if problem:
            return problem
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in unanswered:
                return (
                    f"messages[{index}]: a message with role 'tool' must be a response to a "
                    f"preceding message with 'tool_calls' (id {call_id!r})"
                )
            unanswered.remove(call_id)
            continue
        if unanswered:
            return (
                f"messages[{index}]: an assistant message with 'tool_calls' must be followed by "
                f"tool messages responding to each 'tool_call_id'; missing {unanswered}"
            )
        if role == "assistant":
            problem, unanswered = _assistant_calls(index, message)
            if problem:
                return problem
        elif not message.get("content"):
            return f"messages[{index}].content: must not be empty"
    return None


def _check_content(index: int, role: str, content: Any) -> str | None:
    """Images and files go in user messages; a tool message's parts are text."""
    if not isinstance(content, list):
        return None
    for position, part in enumerate(content):
        where = f"messages[{index}].content[{position}]"
        kind = part.get("type") if isinstance(part, dict) else None
        if role != "user" and kind != "text":
            return f"{where}.type: {kind!r} parts are allowed in user messages only"
        problem = openai_part_problem(where, part)
        if problem:
            return problem
    return None


def _assistant_calls(index: int, message: JsonDict) -> tuple[str | None, list[str]]:
    calls = message.get("tool_calls") or []
    if not calls and not message.get("content"):
        return f"messages[{index}]: an assistant message needs content or tool_calls", []
    ids = []
    for position, call in enumerate(calls):
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("arguments"), str):
            return f"messages[{index}].tool_calls[{position}].function.arguments: required", []
        ids.append(call.get("id"))
    return None, ids
