"""The offline `demo:tool-caller` model: it calls each tool it is offered once, then answers with
what they returned. No API key, no network, no randomness.

It is the model for trying a worker of your own tools before any key is at hand (the README's
library quick start): every tool the agent offers is called once, all in one answer, with
arguments made from the tool's JSON Schema (`schema_arguments`); a call that needs approval
pauses the turn as any other; then the next call answers with one line per tool, its arguments
and what came back (an error, a rejection or a timeout included). The script is read off the
conversation, so a retried or replayed call gives the same answer, and each new user message
(the next turn of a conversation) starts it again. Asked for structured output (the system
prompt's JSON Schema, as a model reads it), it answers with a value made from that schema.
"""

from __future__ import annotations

import json
from typing import Final

from pydantic import JsonValue
from turnkeeper.activities.providers.provider import ModelRequest
from turnkeeper.activities.providers.schema_arguments import arguments_for, example_value
from turnkeeper.contracts.messages import (
    ContentBlock,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)

TOOL_CALLER_MODEL: Final = "tool-caller"
PREFIX: Final = "[offline tool-caller model]"
# A result longer than this is cut in the answer; the whole result stays in the transcript.
RESULT_CHARS: Final = 300
# How the turn asks for structured output, at the end of the system prompt
# (`workflows/answer/structured_output.py`); read here as a model reads it.
SCHEMA_MARK: Final = "that fits this JSON Schema:\n"


def tool_caller_answer(request: ModelRequest) -> list[ContentBlock]:
    """The model's next answer: every offered tool called once after a user's message; the
    results summed up after the tools answered."""
    messages = request.messages
    answered = _answered_calls(messages)
    schema = _output_schema(request.system)
    if schema is not None and (answered is not None or not request.tools):
        return [TextBlock(text=json.dumps(example_value(schema)))]
    if answered is not None:
        return [TextBlock(text=_summary(*answered))]
    task = messages[-1].text() if messages else ""
    if not request.tools:
        return [TextBlock(text=f"{PREFIX} I was offered no tools to call. Your message: {task}")]
    step = sum(1 for message in messages if message.role == "assistant")
    calls: list[ContentBlock] = [
        ToolUseBlock(
            id=f"toolu_caller_{step}_{index}",
            name=tool.name,
            input=arguments_for(tool.input_schema),
        )
        for index, tool in enumerate(request.tools)
    ]
    names = ", ".join(tool.name for tool in request.tools)
    return [TextBlock(text=f"Calling each of my {len(calls)} tool(s) once: {names}."), *calls]


def _answered_calls(messages: list[Message]) -> tuple[list[ToolUseBlock], Message] | None:
    """The calls of the last answer and the message holding their results, when the
    conversation ends with those results."""
    if len(messages) < 2 or messages[-1].role != "user" or messages[-2].role != "assistant":
        return None
    uses = messages[-2].tool_uses()
    return (uses, messages[-1]) if uses else None


def _summary(uses: list[ToolUseBlock], results: Message) -> str:
    by_call = {
        block.tool_use_id: block for block in results.content if isinstance(block, ToolResultBlock)
    }
    lines = [f"{PREFIX} I called each tool once:"]
    for use in uses:
        result = by_call.get(use.id)
        arguments = json.dumps(use.input, sort_keys=True)
        if result is None:
            outcome = "no result"
        else:
            text = " ".join(result.text().split())
            text = text if len(text) <= RESULT_CHARS else text[: RESULT_CHARS - 1] + "…"
            outcome = f"error: {text}" if result.is_error else f"returned {text}"
        lines.append(f"- {use.name}({arguments}) {outcome}")
    return "\n".join(lines)


def _output_schema(system: str) -> dict[str, JsonValue] | None:
    _, mark, rest = system.rpartition(SCHEMA_MARK)
    if not mark:
        return None
    try:
        schema, _ = json.JSONDecoder().raw_decode(rest)
    except ValueError:
        return None
    return schema if isinstance(schema, dict) else None
