"""The offline demo model with skills: offered `load_skill` and skills listed in its system
prompt, it loads them all at once first, then plays its usual script."""

from __future__ import annotations

from turnkeeper.activities.providers.demo_provider import DEMO_MODEL, DemoProvider
from turnkeeper.activities.providers.provider import ModelRequest
from turnkeeper.contracts.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from turnkeeper.contracts.tools import ToolDefinition

SYSTEM = (
    "You summarise.\n\n## Skills\nThese skills hold instructions.\n\n"
    "- house-style: How we word summaries.\n- refund-policy: How to refund."
)
TOOLS = [ToolDefinition(name="list_files"), ToolDefinition(name="load_skill")]


def ask(messages: list[Message], system: str = SYSTEM) -> ModelRequest:
    return ModelRequest(
        model=DEMO_MODEL, system=system, messages=messages, tools=TOOLS, max_tokens=100
    )


def uses(content: list) -> list[tuple[str, dict]]:
    return [(b.name, b.input) for b in content if isinstance(b, ToolUseBlock)]


async def test_the_demo_loads_every_listed_skill_then_goes_on_with_its_script() -> None:
    opening = [Message(role="user", content=[TextBlock(text="Summarise the workspace")])]
    first = await DemoProvider().complete(ask(opening))
    assert uses(first.content) == [
        ("load_skill", {"name": "house-style"}),
        ("load_skill", {"name": "refund-policy"}),
    ]
    loaded = [
        ToolResultBlock(tool_use_id=b.id, content="instructions")
        for b in first.content
        if isinstance(b, ToolUseBlock)
    ]
    conversation = [
        *opening,
        Message(role="assistant", content=first.content),
        Message(role="user", content=loaded),
    ]
    second = await DemoProvider().complete(ask(conversation))
    assert uses(second.content) == [("list_files", {"path": "."})]


async def test_without_a_listing_or_load_skill_the_demo_plays_its_usual_script() -> None:
    opening = [Message(role="user", content=[TextBlock(text="Summarise the workspace")])]
    unlisted = await DemoProvider().complete(ask(opening, system="You summarise."))
    assert uses(unlisted.content) == [("list_files", {"path": "."})]
    request = ask(opening).model_copy(update={"tools": [ToolDefinition(name="list_files")]})
    not_offered = await DemoProvider().complete(request)
    assert uses(not_offered.content) == [("list_files", {"path": "."})]
