"""The offline demo model as a lead agent: offered sub-agents, it hands each the user's task at
once, then answers with what they said."""

from __future__ import annotations

from turnkeeper.activities.providers.demo_provider import DEMO_MODEL, DemoProvider
from turnkeeper.activities.providers.provider import ModelRequest
from turnkeeper.contracts.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from turnkeeper.contracts.tools import ToolDefinition
from turnkeeper.workflows.subagents.tools import TASK_SCHEMA

TOOLS = [
    ToolDefinition(name="list_files"),
    ToolDefinition(name="writer", input_schema=TASK_SCHEMA),  # type: ignore[arg-type]
    ToolDefinition(name="researcher", input_schema=TASK_SCHEMA),  # type: ignore[arg-type]
]


def ask(messages: list[Message]) -> ModelRequest:
    return ModelRequest(model=DEMO_MODEL, messages=messages, tools=TOOLS, max_tokens=100)


async def test_the_demo_lead_delegates_to_every_subagent_then_answers() -> None:
    opening = [Message(role="user", content=[TextBlock(text="Summarise the notes")])]
    first = await DemoProvider().complete(ask(opening))

    uses = [b for b in first.content if isinstance(b, ToolUseBlock)]
    assert [(u.name, u.input) for u in uses] == [
        ("researcher", {"task": "Summarise the notes"}),
        ("writer", {"task": "Summarise the notes"}),
    ]
    assert first.stop_reason == "tool_use"
    results = [ToolResultBlock(tool_use_id=u.id, content=f"{u.name} done") for u in uses]
    answer = await DemoProvider().complete(
        ask(
            [
                *opening,
                Message(role="assistant", content=first.content),
                Message(role="user", content=results),
            ]
        )
    )
    assert answer.stop_reason == "end_turn"
    assert "- researcher: researcher done\n- writer: writer done" in answer.content[0].text  # type: ignore[union-attr]
