"""`TurnRequest` in, `AgentReport` out: the JSON a caller sends and reads."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    ConfigDict,
    Discriminator,
    Field,
    JsonValue,
    Tag,
    field_validator,
    model_validator,
)
from turnkeeper.contracts.budget_extension import BudgetExtension, OnBudgetExhausted
from turnkeeper.contracts.compaction import CompactedHistory, CompactionSpec
from turnkeeper.contracts.contract_model import ContractModel
from turnkeeper.contracts.decision_signing import parse_public_key
from turnkeeper.contracts.messages import Message
from turnkeeper.contracts.names import KNOWN_PROVIDERS, PROVIDER_NAME_PATTERN
from turnkeeper.contracts.signals import DecisionRecord

DEFAULT_MAX_ITERATIONS = 10
DEFAULT_MAX_TOKENS = 4096
DEFAULT_APPROVAL_TIMEOUT_S = 86_400
TOOL_NAME_PATTERN = r"^[a-zA-Z0-9_-]{1,64}$"
SUMMARY_INPUT_CHARS = 120
DEFAULT_FALLBACK_COOLDOWN_S = 60.0
DEFAULT_FALLBACK_AFTER_ATTEMPTS = 2
# `agent.fallback_on` values, each naming a refusal a fallback model may cure.
FallbackRefusal = Literal["auth", "invalid_request", "context_too_long", "content_filtered"]


class Price(ContractModel):
    """USD per million tokens; overrides the pricing table for this request's model."""

    model_config = ConfigDict(extra="forbid")
    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)
    cache_read_per_mtok: float | None = Field(default=None, ge=0)
    cache_write_per_mtok: float | None = Field(default=None, ge=0)


def split_model(model: str) -> tuple[str, str]:
    """`"anthropic:claude-sonnet-4-6"` -> `("anthropic", "claude-sonnet-4-6")`."""
    provider, _, name = model.partition(":")
    return provider, name


def _check_model(model: str) -> str:
    provider, name = split_model(model)
    if not name:
        raise ValueError(f"model must be 'provider:model-name', got {model!r}")
    if provider not in KNOWN_PROVIDERS and not re.match(PROVIDER_NAME_PATTERN, provider):
        known = ", ".join(sorted(KNOWN_PROVIDERS))
        raise ValueError(
            f"unknown provider {provider!r} in {model!r}; known: {known}, or a named endpoint "
            f"of the worker's TURNKEEPER_PROVIDERS (lower-case letters, digits, '-', '_')"
        )
    return model


class Approver(ContractModel):
    """An approver whose decisions must be signed with the key of `public_key`."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1)
    # An OpenSSH public key line, `ssh-ed25519 AAAA… comment`; Ed25519 only.
    public_key: str | None = None

    @field_validator("public_key")
    @classmethod
    def _check_key(cls, line: str | None) -> str | None:
        if line is not None:
            parse_public_key(line)
        return line


def _approver_form(entry: Any) -> str:
    return "name" if isinstance(entry, str) else "approver"


# A plain name (unsigned decisions) or an Approver; tagged so that a bad entry is reported
# against the one form it has, not against both.
ApproverEntry = Annotated[
    Annotated[str, Tag("name")] | Annotated[Approver, Tag("approver")],
    Discriminator(_approver_form),
]


class AgentSpec(ContractModel):
    model_config = ConfigDict(extra="forbid")
    id: str = Field(min_length=1)
    model: str
    fallback_models: list[str] = Field(default_factory=list)
    system_prompt: str = ""
    tools: list[str] = Field(
        default_factory=lambda: ["list_files", "read_file", "search_files", "write_file"]
    )
    max_iterations: int = Field(default=DEFAULT_MAX_ITERATIONS, ge=1, le=10_000)
    max_tokens: int = Field(default=DEFAULT_MAX_TOKENS, ge=1)
    output_schema: dict[str, JsonValue] | None = None
    price: Price | None = None
    # When set, only these approvers' decisions count (the update refuses others; the signal
    # ignores and logs them). When any of them has a public key, every decision must be signed.
    approvers: list[ApproverEntry] | None = None
    # False: the calls of one response run one by one, in call order.
    parallel_tool_calls: bool = True
    # True: model calls stream, and their text reaches the turn's event stream (`turnkeeper
    # watch`) as it arrives, at the cost of a few more history events per call.
    stream: bool = False
    # Opt-in: shorten what model calls send once it would exceed a token limit
    # (contracts/compaction.py). None: never.
    compaction: CompactionSpec | None = None
    # The fallback chain (`model`, then `fallback_models`): a model that exhausted its retries is
    # skipped for this long by the turn's later model calls.
    fallback_cooldown_s: float = Field(default=DEFAULT_FALLBACK_COOLDOWN_S, ge=0)
    # With a model after it in the chain, a model gets this many attempts, not the full retry
    # schedule, before the turn moves on.
    fallback_after_attempts: int = Field(default=DEFAULT_FALLBACK_AFTER_ATTEMPTS, ge=1, le=6)
    # Refusals that move on to the next model instead of failing the turn (none by default:
    # a refusal is a fault to fix, not an outage to ride out).
    fallback_on: list[FallbackRefusal] = Field(default_factory=list)
    # Anthropic prompt caching: each call reads the previous call's prefix from the cache.
    prompt_cache: bool = True

    @field_validator("model")
    @classmethod
    def _check_primary(cls, model: str) -> str:
        return _check_model(model)

    @field_validator("fallback_models")
    @classmethod
    def _check_fallbacks(cls, models: list[str]) -> list[str]:
        return [_check_model(model) for model in models]

    @field_validator("approvers")
    @classmethod
    def _check_approvers(
        cls, approvers: list[str | Approver] | None
    ) -> list[str | Approver] | None:
        names = [_approver_name(entry) for entry in approvers or []]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(f"approvers must have distinct names; repeated: {repeated}")
        return approvers

    def approver_names(self) -> list[str] | None:
        """The names whose decisions count, or None when anyone may decide."""
        if self.approvers is None:
            return None
        return [_approver_name(entry) for entry in self.approvers]

    def approver_keys(self) -> dict[str, str]:
        """Approver name -> public key line. Not empty: every decision must be signed."""
        return {
            entry.name: entry.public_key
            for entry in self.approvers or []
            if isinstance(entry, Approver) and entry.public_key is not None
        }


def _approver_name(entry: str | Approver) -> str:
    return entry if isinstance(entry, str) else entry.name


class Constraints(ContractModel):
    model_config = ConfigDict(extra="forbid")
    allowed_tools: list[str] | None = None
    time_budget_ms: int | None = Field(default=None, gt=0)
    cost_budget_usd: float | None = Field(default=None, gt=0)
    max_tool_interactions: int | None = Field(default=None, ge=0)
    require_approval: list[str] = Field(default_factory=list)
    approval_timeout_s: float = Field(default=DEFAULT_APPROVAL_TIMEOUT_S, gt=0)
    # Tool calls whose arguments do not match the tool's schema are sent back to the model to
    # correct, this many times per turn; one more fails the turn with ToolArgumentsInvalid.
    max_argument_corrections: int = Field(default=3, ge=0)
    # "pause": a turn that would exceed a budget waits up to approval_timeout_s for the
    # `extend_budget` update instead of failing (contracts/budget_extension.py).
    on_budget_exhausted: OnBudgetExhausted = "fail"

    def needs_approval(self, tool: str) -> bool:
        return "*" in self.require_approval or tool in self.require_approval


class TaskSpec(ContractModel):
    model_config = ConfigDict(extra="forbid")
    id: str = Field(min_length=1)
    input: str = Field(min_length=1)
    constraints: Constraints = Field(default_factory=Constraints)


class ExternalToolSpec(ContractModel):
    """A tool the caller executes: the turn pauses until `submit_tool_result` brings its output."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=TOOL_NAME_PATTERN)
    description: str = ""
    input_schema: dict[str, JsonValue] = Field(default_factory=lambda: {"type": "object"})


class TurnRequest(ContractModel):
    model_config = ConfigDict(extra="forbid")
    agent: AgentSpec
    task: TaskSpec
    external_tools: list[ExternalToolSpec] = Field(default_factory=list)
    history: list[Message] = Field(default_factory=list)
    # The earlier conversation by reference: an earlier report's `conversation_ref` (a chain in
    # the content store, rooted at the first turn's system prompt and tool definitions). A
    # session passes it so that no turn carries the conversation through history by value.
    history_ref: str | None = Field(default=None, min_length=1)
    # With history_ref and agent.compaction: the earlier report's `history_compaction`.
    history_compaction: CompactedHistory | None = None

    def summary(self) -> str:
        """One line for the Web UI's static summary: agent, task and the input's first line."""
        first_line = next((line for line in self.task.input.splitlines() if line.strip()), "")
        if len(first_line) > SUMMARY_INPUT_CHARS:
            first_line = first_line[:SUMMARY_INPUT_CHARS] + "…"
        return f"{self.agent.id} · {self.task.id} · {first_line.strip()}"

    @model_validator(mode="after")
    def _external_names_unique(self) -> TurnRequest:
        names = [tool.name for tool in self.external_tools]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(f"external_tools names must be unique; repeated: {duplicates}")
        return self

    @model_validator(mode="after")
    def _one_kind_of_history(self) -> TurnRequest:
        if self.history and self.history_ref is not None:
            raise ValueError("give history or history_ref, not both")
        if self.history_compaction is not None:
            if self.history_ref is None:
                raise ValueError("history_compaction: needs the history_ref it was made for")
            if self.agent.compaction is None:
                raise ValueError("history_compaction: needs agent.compaction")
        return self


class Usage(ContractModel):
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
        )


Outcome = Literal["completed", "max_tokens", "failed", "cancelled"]


class AgentReport(ContractModel):
    agent_id: str
    task_id: str
    outcome: Outcome
    output: str = ""
    structured_output: JsonValue = None
    messages: list[Message] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float = 0.0
    llm_calls: int = 0
    tool_calls: int = 0
    iterations: int = 0
    duration_ms: int = 0
    models_used: list[str] = Field(default_factory=list)
    decisions: list[DecisionRecord] = Field(default_factory=list)
    # The stored conversation after this turn (a later turn's `history_ref` continues it); None
    # when nothing was stored (no model call and no history_ref).
    conversation_ref: str | None = None
    # Of a compacted turn: how its last request saw that conversation; pass it as the next
    # turn's `history_compaction` (sessions do) to go on compacted.
    history_compaction: CompactedHistory | None = None
    budget_extensions: list[BudgetExtension] = Field(default_factory=list)
