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
from turnkeeper.contracts.attachments import DocumentBlock, ImageBlock
from turnkeeper.contracts.call_costs import CostSource
from turnkeeper.contracts.claim_check import ClaimChecked
from turnkeeper.contracts.contract_model import ContractModel
from turnkeeper.contracts.messages import ContentBlock, Message, ResultPart, TextBlock
from turnkeeper.contracts.policy_io import PolicyCaller, PolicyCheckResult
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
    """Tells it apart from the content blocks it stands for."""
    ref: str
    """The block's key in the content store."""


class MessageDraft(CompactModel):
    """A message to append to the stored conversation; large blocks travel as references."""

    role: Literal["user", "assistant"]
    """Who speaks."""
    content: list[Annotated[ContentBlock | BlockRef, Field(discriminator="type")]]
    """The message's blocks, each given by value or, when stored already, by reference."""


class ConversationDelta(CompactModel):
    """The stored conversation `base` (None: empty) followed by `append`."""

    base: str | None = None
    """The stored conversation it continues; None: a new one."""
    append: list[MessageDraft] = Field(default_factory=list)
    """The messages that follow `base`, oldest first."""


class CallContext(CompactModel):
    """What stays the same across a turn's model calls; stored once, then sent by reference."""

    system_prompt: str = ""
    """The agent's system prompt."""
    external_tools: list[ExternalToolSpec] = Field(default_factory=list)
    """The request's external tools."""
    mcp_tools: list[ToolDefinition] = Field(default_factory=list)
    """The MCP tools this turn discovered, offered under their server-qualified names."""


class ToolTraits(CompactModel):
    """What the workflow must know of a worker tool to dispatch its calls safely."""

    name: str
    """The tool's name."""
    input_schema: dict[str, JsonValue] = Field(default_factory=dict)
    """The JSON Schema its calls' arguments are checked against."""
    requires_approval: bool = False
    """Every call waits for a human decision, whatever the request says."""
    idempotent: bool = True
    """Temporal may run a call again when the worker running it died; False: at most once
    (workflows/tools/retries.py)."""
    timeout_s: float = 60.0
    """How long one call may run."""
    priority: int = 0
    """When one response asks for several tiers, only the highest runs."""
    local: bool = False
    """Runs as a local activity (the fast path for cheap tools)."""
    previews_write: bool = False
    """The workspace's own `write_file`: before a call waits for approval, the turn asks the
    worker's `write_preview` for the diff it would make. Read from the model call's result,
    which history keeps, so a turn whose worker predates previews replays without one."""
    sandboxed: bool = False
    """`run_python` and `run_shell`: calls run as `sandbox_call`, which takes and returns the
    turn's sandbox folder (workflows/tools/sandbox.py). Read from history like `previews_write`."""


class ModelCallInput(CompactModel, ClaimChecked):
    """The `model_call` activity's input: one model call of a turn's iteration."""

    turn_id: str = ""
    """Empty: the activity reads the turn's id from its own info. Set only by older
    workflows."""
    iteration: int
    """The iteration the call belongs to."""
    model: str
    """The `provider:model` to call."""
    max_tokens: int
    """The longest answer, in tokens."""
    price: Price | None = None
    """The request's override of the pricing table."""
    cost_budget_left_usd: float | None = None
    """What is left of the turn's cost budget: a call whose input alone would cost more is not
    made."""
    want_tool_traits: bool = False
    """Ask for the traits of the offered worker tools (once per turn; they are kept in
    state)."""
    stream_text: bool = False
    """Publish the answer's text to the turn's event stream as it streams in."""
    prompt_cache: bool = True
    """Anthropic prompt caching (cache breakpoints on tools, system prompt and newest
    messages)."""
    skipped: list[str] = Field(default_factory=list)
    """Models of the fallback chain this call stands in for, each with why it was passed
    over."""
    context: CallContext | None = None
    """The turn's context, sent when there is no stored conversation yet: it becomes the
    root."""
    context_ref: str | None = None
    """Only for turns whose conversation chain predates context roots."""
    offered_tools: list[str] = Field(default_factory=list)
    """The names of the tools the model is offered, in order; empty once the turn's tool
    interactions are spent."""
    conversation: ConversationDelta
    """The conversation so far: the stored one and what the turn has not sent yet."""
    tenant: str | None = None
    """The turn's tenant: the call reserves its maximum cost against the tenant's caps."""
    policy_caller: PolicyCaller | None = None
    """With `agent.policy`: check the answer's tool calls against the worker's policies as soon
    as it comes (`ModelCallResult.policy_rulings`), in this activity rather than one more."""


StopReason = Literal["end_turn", "tool_use", "max_tokens", "stop_sequence", "pause_turn", "refusal"]


class ModelCallResult(CompactModel, ClaimChecked):
    """The `model_call` activity's result: the model's answer, what it cost, and where the
    conversation that now ends with it is stored."""

    message: Message
    """The model's answer."""
    stop_reason: StopReason
    """Why the model stopped."""
    usage: Usage
    """The call's tokens."""
    cost_usd: float
    """What the call cost (0.0 when `priced_by` is `unknown`)."""
    priced_by: CostSource | Literal[""] = ""
    """Who priced the call; empty from workers before cost sources (the pricing table or
    `agent.price`, or nobody when `cost_usd` is 0)."""
    model: str = ""
    """The `provider:model` that answered; empty: the model the call asked for (the workflow
    knows it)."""
    conversation_ref: str
    """The stored conversation, the answer included."""
    context_ref: str | None = None
    """Only from workers that stored the context apart from the conversation (it is now the
    conversation's root, named by `conversation_ref`)."""
    duration_ms: int
    """How long the call took."""
    capacity_wait_ms: int = 0
    """How long the call waited for fleet capacity (`TURNKEEPER_RATE_LIMITS`), inside
    `duration_ms`."""
    # The two fields below are what the workflow keeps of the offered worker tools (workers
    # before `want_tool_traits` sent `approval_required` with every answer).
    approval_required: list[str] = Field(default_factory=list)
    """Only in answer to `want_tool_traits`: the offered worker tools that declare they always
    need a human approval (e.g. write_file)."""
    tool_traits: list[ToolTraits] = Field(default_factory=list)
    """Only in answer to `want_tool_traits`: the offered worker tools' traits."""
    policy_rulings: list[PolicyCheckResult] = Field(default_factory=list)
    """Only in answer to `policy_caller`: the policies' decision on each tool call of the
    answer, by `call_id`."""

    @field_serializer("usage")
    def _nonzero_usage(self, usage: Usage) -> dict[str, int]:
        return {name: count for name, count in usage.model_dump().items() if count}


ToolOutcome = Literal["ok", "error"]


class ToolCallInput(CompactModel, ClaimChecked):
    """The `tool_call` activity's input: one call of a worker tool that the model made."""

    turn_id: str = ""
    """As in ModelCallInput."""
    call_id: str
    """The call's id."""
    tool: str
    """The tool called."""
    input: dict[str, JsonValue]
    """The arguments."""

    @property
    def idempotency_key(self) -> str:
        return f"{self.turn_id}/{self.call_id}"


class ToolCallResult(CompactModel, ClaimChecked):
    """The tool's `tool_result` block, already in the content store under `block_ref`."""

    block_ref: str
    """The `tool_result` block's key in the content store."""
    is_error: bool
    """The call failed, timed out or was refused."""
    content: str
    """The result's text, as the model reads it."""
    duration_ms: int
    """How long the call took."""
    attachments: list[ImageBlock | DocumentBlock] = Field(default_factory=list)
    """The result's images and documents, stored already (`turnkeeper.Image`, `read_file` on
    an image); empty from tools that answer with text only."""

    def result_content(self) -> str | list[ResultPart]:
        """The `tool_result` block's content: the text, then the images, if any."""
        return result_content(self.content, self.attachments)


def result_content(
    text: str, attachments: list[ImageBlock | DocumentBlock]
) -> str | list[ResultPart]:
    """A tool result's content: its text alone, or its text (when there is any) and its images;
    the APIs refuse an empty text block."""
    if not attachments:
        return text
    return [*([TextBlock(text=text)] if text else []), *attachments]
