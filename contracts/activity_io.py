"""Inputs and results of the activities. What crosses the activity boundary is allowlisted and
kept small: the conversation travels by reference into the content store (a claim check), so a
turn's history grows with each iteration's new content only, never with the whole conversation
re-sent to every model call.
"""

from __future__ import annotations

import functools
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    Field,
    JsonValue,
    SerializerFunctionWrapHandler,
    field_serializer,
    model_serializer,
)
from turnkeeper.contracts.claim_check import ClaimChecked
from turnkeeper.contracts.contract_model import ContractModel
from turnkeeper.contracts.messages import ContentBlock, Message
from turnkeeper.contracts.tools import ToolDefinition
from turnkeeper.contracts.turn import ExternalToolSpec, Price, Usage

_SIMPLE_DEFAULTS = (type(None), bool, int, float, str)


class CompactModel(ContractModel):
    """Leaves out fields that hold their default when serialized: these models travel through
    history on every iteration, and every byte there is paid again by every replay."""

    @model_serializer(mode="wrap")
    def _without_defaults(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        data = handler(self)
        defaults = _defaults(type(self))
        return {
            key: value
            for key, value in data.items()
            if key not in defaults or not _is_default(value, defaults[key])
        }


@functools.cache
def _defaults(model: type[BaseModel]) -> dict[str, object]:
    """Each optional field's default, made once per class: asking pydantic for it on every
    serialization (default factories included) was most of what encoding a payload cost."""
    return {
        name: field.get_default(call_default_factory=True)
        for name, field in model.model_fields.items()
        if not field.is_required()
    }


def _is_default(value: object, default: object) -> bool:
    if isinstance(default, _SIMPLE_DEFAULTS) or default in ([], {}):
        return type(value) is type(default) and value == default
    return False


class BlockRef(ContractModel):
    """A content block already in the content store (e.g. a tool result the tool activity put)."""

    type: Literal["ref"] = "ref"
    ref: str


class MessageDraft(CompactModel):
    """A message to append to the stored conversation; large blocks travel as references."""

    role: Literal["user", "assistant"]
    content: list[Annotated[ContentBlock | BlockRef, Field(discriminator="type")]]


class ConversationDelta(CompactModel):
    """The stored conversation `base` (None: empty) followed by `append`."""

    base: str | None = None
    append: list[MessageDraft] = Field(default_factory=list)


class CallContext(CompactModel):
    """What stays the same across a turn's model calls; stored once, then sent by reference."""

    system_prompt: str = ""
    external_tools: list[ExternalToolSpec] = Field(default_factory=list)
    # The MCP tools this turn discovered, offered under their server-qualified names.
    mcp_tools: list[ToolDefinition] = Field(default_factory=list)


class ToolTraits(CompactModel):
    """What the workflow must know of a worker tool to dispatch its calls safely."""

    name: str
    input_schema: dict[str, JsonValue] = Field(default_factory=dict)
    requires_approval: bool = False
    idempotent: bool = True
    timeout_s: float = 60.0
    priority: int = 0  # when one response asks for several tiers, only the highest runs
    local: bool = False  # runs as a local activity (the fast path for cheap tools)


class ModelCallInput(CompactModel, ClaimChecked):
    # Empty: the activity reads the turn's id from its own info. Set only by older workflows.
    turn_id: str = ""
    iteration: int
    model: str
    max_tokens: int
    price: Price | None = None  # the request's override of the pricing table
    # What is left of the turn's cost budget: a call whose input alone would cost more is not made.
    cost_budget_left_usd: float | None = None
    # Ask for the traits of the offered worker tools (once per turn; they are kept in state).
    want_tool_traits: bool = False
    # Publish the answer's text to the turn's event stream as it streams in.
    stream_text: bool = False
    # Anthropic prompt caching (cache breakpoints on tools, system prompt and newest messages).
    prompt_cache: bool = True
    # Models of the fallback chain this call stands in for, each with why it was passed over.
    skipped: list[str] = Field(default_factory=list)
    # The turn's context, sent when there is no stored conversation yet: it becomes the root.
    context: CallContext | None = None
    # Only for turns whose conversation chain predates context roots.
    context_ref: str | None = None
    offered_tools: list[str] = Field(default_factory=list)
    conversation: ConversationDelta


StopReason = Literal["end_turn", "tool_use", "max_tokens", "stop_sequence", "pause_turn", "refusal"]


class ModelCallResult(CompactModel, ClaimChecked):
    message: Message
    stop_reason: StopReason
    usage: Usage
    cost_usd: float
    model: str = ""  # empty: the model the call asked for (the workflow knows it)
    conversation_ref: str
    # Only from workers that stored the context apart from the conversation (it is now the
    # conversation's root, named by `conversation_ref`).
    context_ref: str | None = None
    duration_ms: int
    # What the workflow keeps of the offered worker tools, only in answer to `want_tool_traits`
    # (once per turn; workers before that sent `approval_required` with every answer): those
    # that declare they always need a human approval (e.g. write_file), and their traits.
    approval_required: list[str] = Field(default_factory=list)
    tool_traits: list[ToolTraits] = Field(default_factory=list)

    @field_serializer("usage")
    def _nonzero_usage(self, usage: Usage) -> dict[str, int]:
        return {name: count for name, count in usage.model_dump().items() if count}


ToolOutcome = Literal["ok", "error"]


class ToolCallInput(CompactModel, ClaimChecked):
    turn_id: str = ""  # as in ModelCallInput
    call_id: str
    tool: str
    input: dict[str, JsonValue]

    @property
    def idempotency_key(self) -> str:
        return f"{self.turn_id}/{self.call_id}"


class ToolCallResult(CompactModel, ClaimChecked):
    """The tool's `tool_result` block, already in the content store under `block_ref`."""

    block_ref: str
    is_error: bool
    content: str
    duration_ms: int
