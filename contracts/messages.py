"""Conversation messages as Anthropic-style content blocks (the contract's message shape)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, JsonValue, field_validator
from turnkeeper.contracts.attachments import DocumentBlock, ImageBlock
from turnkeeper.contracts.contract_model import ContractModel


class TextBlock(ContractModel):
    """Text, said by the user or the model."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["text"] = "text"
    """Tells the kinds of block apart."""
    text: str
    """The words, as written."""


class ToolUseBlock(ContractModel):
    """A tool call the model made, in an assistant message."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["tool_use"] = "tool_use"
    """Tells the kinds of block apart."""
    id: str = Field(min_length=1)
    """The call id (`call_id` in signals, updates and events)."""
    name: str = Field(min_length=1)
    """The tool called."""
    input: dict[str, JsonValue] = Field(default_factory=dict)
    """The arguments."""


ResultPart = Annotated[TextBlock | ImageBlock | DocumentBlock, Field(discriminator="type")]


class ToolResultBlock(ContractModel):
    """The answer to a tool call, in the user message after the call."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["tool_result"] = "tool_result"
    """Tells the kinds of block apart."""
    tool_use_id: str = Field(min_length=1)
    """The `id` of the call it answers."""
    content: str | list[ResultPart] = ""
    """The result as the model reads it: text, or text, image and document blocks."""
    is_error: bool = False
    """The call failed, was rejected, timed out or was refused; `content` says why."""

    def text(self) -> str:
        """The result's text, whichever form `content` has."""
        if isinstance(self.content, str):
            return self.content
        return "".join(block.text for block in self.content if isinstance(block, TextBlock))


ContentBlock = Annotated[
    TextBlock | ToolUseBlock | ToolResultBlock | ImageBlock | DocumentBlock,
    Field(discriminator="type"),
]


class Message(ContractModel):
    """One message of a conversation (`turnkeeper.Message`), made of content blocks as in
    Anthropic's Messages API."""

    model_config = ConfigDict(extra="forbid")
    role: Literal["user", "assistant"]
    """Who speaks."""
    content: list[ContentBlock]
    """What is said: text, tool call, tool result, image and document blocks; a bare string
    stands for one text block."""

    @field_validator("content", mode="before")
    @classmethod
    def _plain_text_is_one_block(cls, value: Any) -> Any:
        # The Messages API accepts a bare string as shorthand for one text block; so do we.
        if isinstance(value, str):
            return [{"type": "text", "text": value}]
        return value

    def text(self) -> str:
        """The text of the message's text blocks, joined."""
        return "".join(block.text for block in self.content if isinstance(block, TextBlock))

    def tool_uses(self) -> list[ToolUseBlock]:
        """The tool calls the message makes, in order."""
        return [block for block in self.content if isinstance(block, ToolUseBlock)]
