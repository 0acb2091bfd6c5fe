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
from pydantic_core import PydanticCustomError
from turnkeeper.contracts.a2a_agents import A2aAgentRef, long_form, repeated_name
from turnkeeper.contracts.attachments import DocumentBlock, ImageBlock
from turnkeeper.contracts.budget_extension import BudgetExtension, OnBudgetExhausted
from turnkeeper.contracts.call_costs import PricedCall
from turnkeeper.contracts.compaction import CompactedHistory, CompactionSpec
from turnkeeper.contracts.contract_model import ContractModel
from turnkeeper.contracts.decision_signing import parse_public_key
from turnkeeper.contracts.guardrails import GuardrailDecision, GuardrailRef
from turnkeeper.contracts.messages import Message, TextBlock
from turnkeeper.contracts.names import KNOWN_PROVIDERS, PROVIDER_NAME_PATTERN
from turnkeeper.contracts.policies import PolicyDecision, PolicySpec
from turnkeeper.contracts.sandbox import SandboxReport, SandboxSpec
from turnkeeper.contracts.signals import DecisionRecord
from turnkeeper.contracts.skills import SkillRef
from turnkeeper.contracts.steering import Intervention
from turnkeeper.contracts.subagents import SubagentOutcome, SubagentRecord
from turnkeeper.contracts.tenants import TenantName

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
    """USD per million input tokens."""
    output_per_mtok: float = Field(ge=0)
    """USD per million output tokens."""
    cache_read_per_mtok: float | None = Field(default=None, ge=0)
    """USD per million tokens read from the prompt cache; None: a tenth of `input_per_mtok`."""
    cache_write_per_mtok: float | None = Field(default=None, ge=0)
    """USD per million tokens written to the prompt cache; None: 1.25 times `input_per_mtok`."""


class FallbackModel(ContractModel):
    """A model of the fallback chain with a price of its own (a model the table lacks)."""

    model_config = ConfigDict(extra="forbid")
    model: str
    """The `provider:model`."""
    price: Price | None = None
    """Overrides the pricing table for this model."""

    @field_validator("model")
    @classmethod
    def _check(cls, model: str) -> str:
        return _check_model(model)


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
    """The name decisions are made under (`approver` in the payloads)."""
    public_key: str | None = None
    """An OpenSSH public key line, `ssh-ed25519 AAAA… comment`; Ed25519 only. Decisions under
    this name must carry a signature made with its private key. None: unsigned decisions."""

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
    """`TurnRequest.agent` (`turnkeeper.Agent`): who answers the turn, with which model, tools
    and limits."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(min_length=1)
    """The agent's name: the `AgentId` search attribute, and the key of its standing
    approvals."""
    model: str
    """The first model of the fallback chain, as `provider:model` (`anthropic:claude-sonnet-4-6`);
    the provider is a built-in one or a named endpoint of the worker's `TURNKEEPER_PROVIDERS`."""
    fallback_models: list[str | FallbackModel] = Field(default_factory=list)
    """Further `provider:model`s, tried in order when the models before them fail; an entry
    may be `{"model", "price"}` to price a model the pricing table lacks."""
    system_prompt: str = ""
    """The system prompt of every model call."""
    tools: list[str] = Field(
        default_factory=lambda: ["list_files", "read_file", "search_files", "write_file"]
    )
    """The tools the model may call: worker tools by name, and MCP tools
    (`mcp__<server>__<tool>`, or `mcp__<server>__*` for all of a server's)."""
    max_iterations: int = Field(default=DEFAULT_MAX_ITERATIONS, ge=1, le=10_000)
    """Model calls in the turn; one more fails it with `MaxIterationsExceeded`."""
    max_tokens: int = Field(default=DEFAULT_MAX_TOKENS, ge=1)
    """The longest answer of one model call, in tokens."""
    output_schema: dict[str, JsonValue] | None = None
    """A JSON Schema the answer must fit: the model is asked for JSON, and the report's
    `structured_output` holds the parsed answer. None: a text answer."""
    output_validators: list[str] = Field(default_factory=list)
    """Names of the worker's output validators (`@turnkeeper.output_validator`) that check the
    final answer, in order, after `output_schema` is satisfied; a rejection goes back to the
    model as a correction. Empty: none."""
    guardrails: list[str | GuardrailRef] = Field(
        default_factory=list,
        # Left out when empty, so that a request without guardrails keeps the payload an older
        # worker (whose AgentSpec forbids unknown fields) accepts.
        exclude_if=lambda guardrails: not guardrails,
    )
    """Guardrails of the worker (`@turnkeeper.guardrail`, or the built-in `secrets` and
    `size_cap`) that check the task input, each tool result and the final answer, in order: a
    name (`enforce` mode) or `{"name": …, "mode": "enforce" | "log_only"}`. Empty: none."""
    price: Price | None = None
    """Overrides the pricing table for `model` (a fallback entry takes its own `price`)."""
    approvers: list[ApproverEntry] | None = None
    """Names or `Approver`s. When set, only these approvers' decisions count (the update refuses
    others; the signal ignores and logs them). When any of them has a public key, every decision
    must be signed. None: anyone may decide."""
    parallel_tool_calls: bool = True
    """False: the calls of one response run one by one, in call order."""
    stream: bool = False
    """True: model calls stream, and their text reaches the turn's event stream (`turnkeeper
    watch`, `text_delta` events) as it arrives, at the cost of a few more history events per
    call."""
    compaction: CompactionSpec | None = None
    """Opt-in: shorten what model calls send once it would exceed a token limit
    (contracts/compaction.py). None: never."""
    fallback_cooldown_s: float = Field(default=DEFAULT_FALLBACK_COOLDOWN_S, ge=0)
    """Seconds for which a model of the fallback chain (`model`, then `fallback_models`) that
    exhausted its retries is skipped by the turn's later model calls; 0: never skipped."""
    fallback_after_attempts: int = Field(default=DEFAULT_FALLBACK_AFTER_ATTEMPTS, ge=1, le=6)
    """With a model after it in the chain, a model gets this many attempts, not the full retry
    schedule, before the turn moves on (the last model gets the full schedule)."""
    fallback_on: list[FallbackRefusal] = Field(default_factory=list)
    """Refusals that move on to the next model instead of failing the turn (none by default:
    a refusal is a fault to fix, not an outage to ride out)."""
    prompt_cache: bool = True
    """Anthropic prompt caching: each call reads the previous call's prefix from the cache."""
    subagents: list[SubagentSpec] = Field(default_factory=list)
    """Agents this agent may delegate to: each is offered to the model as a tool of its own
    `name` with input `{"task": "…"}`, and a call runs it as a child turn
    (`workflows/subagents/calls.py`)."""
    skills: list[str | SkillRef] = Field(default_factory=list)
    """Skills of the worker (`TURNKEEPER_SKILLS_DIR`, `run_worker(skills=…)`) this agent may
    use: each is listed by name and description in the system prompt, its tools join the
    agent's, and the model reads its instructions with the built-in tool `load_skill`; an entry
    `{"name": …, "always": true}` appends them to the system prompt at the start instead."""
    a2a_agents: list[A2aAgentRef] = Field(
        default_factory=list,
        # Left out when empty, so that a request without remote agents keeps the payload an
        # older worker (whose AgentSpec forbids unknown fields) accepts.
        exclude_if=lambda agents: not agents,
    )
    """Remote A2A agents of the worker's `TURNKEEPER_A2A_CONFIG` this agent may call: each is
    offered to the model as a tool of its `name` with input `{"message", "task_id"?}`, and a
    call sends the message and follows the remote task to its end (`workflows/tools/a2a.py`).
    An entry may be a plain name or `{"name", "description"}`."""
    policy: PolicySpec | None = Field(default=None, exclude_if=lambda policy: policy is None)
    """Check each tool call against the worker's Cedar policies (`TURNKEEPER_POLICY_FILE`)
    before it runs, enforcing or only recording the decisions (docs/policies.md). None: no
    check. Left out when None, so a request without it stays what older workers accept."""
    sandbox: SandboxSpec | None = Field(
        default=None,
        # Left out when unset, so that a request without it keeps the payload an older worker
        # (whose AgentSpec forbids unknown fields) accepts.
        exclude_if=lambda spec: spec is None,
    )
    """Limits and seed files of the sandbox of `run_python` and `run_shell` (docs/sandbox.md);
    None: the defaults, an empty folder."""

    @field_validator("model")
    @classmethod
    def _check_primary(cls, model: str) -> str:
        return _check_model(model)

    @field_validator("fallback_models")
    @classmethod
    def _check_fallbacks(cls, models: list[str | FallbackModel]) -> list[str | FallbackModel]:
        return [_check_model(model) if isinstance(model, str) else model for model in models]

    @field_validator("a2a_agents", mode="before")
    @classmethod
    def _a2a_long_form(cls, entries: object) -> object:
        return long_form(entries)

    @field_validator("a2a_agents")
    @classmethod
    def _a2a_once(cls, refs: list[A2aAgentRef]) -> list[A2aAgentRef]:
        repeated = repeated_name(refs)
        if repeated is not None:
            raise ValueError(f"names the A2A agent {repeated!r} twice")
        return refs

    @field_validator("guardrails")
    @classmethod
    def _check_guardrails(cls, entries: list[str | GuardrailRef]) -> list[str | GuardrailRef]:
        names = [entry if isinstance(entry, str) else entry.name for entry in entries]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(f"names the guardrail {repeated[0]!r} twice")
        if "" in names:
            raise ValueError("a guardrail's name is empty")
        return entries

    def guardrail_refs(self) -> list[GuardrailRef]:
        """`guardrails`, each in its long form, in order."""
        return [GuardrailRef(name=e) if isinstance(e, str) else e for e in self.guardrails]

    @field_validator("skills")
    @classmethod
    def _check_skills(cls, skills: list[str | SkillRef]) -> list[str | SkillRef]:
        names = [
            SkillRef(name=entry).name if isinstance(entry, str) else entry.name for entry in skills
        ]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(f"names the skill {repeated[0]!r} twice")
        return skills

    def skill_refs(self) -> list[SkillRef]:
        """`skills`, each in its long form, in order."""
        return [SkillRef(name=entry) if isinstance(entry, str) else entry for entry in self.skills]

    def fallback_chain(self) -> list[str]:
        """The `provider:model`s of `fallback_models`, in order."""
        return [m if isinstance(m, str) else m.model for m in self.fallback_models]

    def models(self) -> list[str]:
        """`model`, then the `provider:model`s of `fallback_models`."""
        return [self.model, *self.fallback_chain()]

    def price_of(self, model: str) -> Price | None:
        """The request's own price for a model of the chain (`price` for `model`, an entry's
        `price` for a fallback); None: the pricing table's, if it has one."""
        if model == self.model:
            return self.price
        entries = [m for m in self.fallback_models if not isinstance(m, str) and m.model == model]
        return entries[0].price if entries else None

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
    """`TaskSpec.constraints` (`turnkeeper.Constraints`): a turn's budgets and approval rules;
    every field has a default. In a session, the default constraints of each turn."""

    model_config = ConfigDict(extra="forbid")
    allowed_tools: list[str] | None = None
    """Narrows the agent's tools and the external tools to these names. None: all of them."""
    time_budget_ms: int | None = Field(default=None, gt=0)
    """Wall time the turn may take, time spent waiting for a human not counted. None:
    unlimited."""
    cost_budget_usd: float | None = Field(default=None, gt=0)
    """USD the turn may spend; a model call whose input alone would cost more than is left is
    not made. In a session's start input, the budget of the whole session. None: unlimited."""
    max_tool_interactions: int | None = Field(default=None, ge=0)
    """Iterations in which the model may call tools; once spent, the next call offers no tools.
    None: unlimited."""
    require_approval: list[str] = Field(default_factory=list)
    """Tools whose calls wait for a human decision, or `["*"]` for every tool (tools that declare
    it themselves, like `write_file`, always do)."""
    approval_timeout_s: float = Field(default=DEFAULT_APPROVAL_TIMEOUT_S, gt=0)
    """How long a decision (or a budget extension) may take; a call without a decision in time
    counts as rejected ("approval timed out")."""
    max_argument_corrections: int = Field(default=3, ge=0)
    """Tool calls whose arguments do not match the tool's schema are sent back to the model to
    correct, this many times per turn; one more fails the turn with `ToolArgumentsInvalid`."""
    on_budget_exhausted: OnBudgetExhausted = "fail"
    """`"fail"`: a turn that would exceed a budget fails. `"pause"`: it waits (state
    `awaiting_budget`) up to `approval_timeout_s` for the `extend_budget` update instead
    (contracts/budget_extension.py)."""

    def needs_approval(self, tool: str) -> bool:
        return "*" in self.require_approval or tool in self.require_approval


class SubagentSpec(ContractModel):
    """One of `agent.subagents` (`turnkeeper.Subagent`): an agent the model may hand a task
    to. It runs as a child `AgentTurnWorkflow` whose budgets are what the parent has left."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=TOOL_NAME_PATTERN)
    """The tool name the model calls it by, 1 to 64 of `a-z A-Z 0-9 _ -`; unique among the
    agent's tools, external tools and other sub-agents."""
    description: str = ""
    """What the model reads about it: what to delegate to this agent."""
    agent: AgentSpec
    """The agent that answers the delegated task (an agent object, as `TurnRequest.agent`)."""
    constraints: Constraints | None = None
    """The sub-agent's own limits; its budgets are the smaller of these and what its parent has
    left at the call. None: the parent's remaining budgets and its approval rules alone."""


InputBlock = Annotated[TextBlock | ImageBlock | DocumentBlock, Field(discriminator="type")]


class TaskSpec(ContractModel):
    """`TurnRequest.task` (`turnkeeper.Task`): what the turn is to do, and within which
    constraints."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(min_length=1)
    """The caller's task id: the `TaskId` search attribute."""
    input: str | list[InputBlock] = Field(min_length=1)
    """The user message that starts the turn: its text, or content blocks (text, image and
    document blocks; docs/attachments.md)."""
    constraints: Constraints = Field(default_factory=Constraints)
    """Budgets and approval rules."""

    @field_validator("input", mode="before")
    @classmethod
    def _empty_text(cls, value: Any) -> Any:
        # The union's own length error would speak of items, which an empty string has none of.
        if value == "":
            raise PydanticCustomError("string_too_short", "String should have at least 1 character")
        return value

    def text(self) -> str:
        """The input's text (its text blocks joined, where it has blocks)."""
        if isinstance(self.input, str):
            return self.input
        return "\n".join(block.text for block in self.input if isinstance(block, TextBlock))

    def attachments(self) -> list[ImageBlock | DocumentBlock]:
        """The input's image and document blocks, in order."""
        if isinstance(self.input, str):
            return []
        return [block for block in self.input if not isinstance(block, TextBlock)]


class ExternalToolSpec(ContractModel):
    """A tool the caller executes: the turn pauses until `submit_tool_result` brings its output."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=TOOL_NAME_PATTERN)
    """The tool's name, 1 to 64 of `a-z A-Z 0-9 _ -`; unique among the external tools."""
    description: str = ""
    """What the model reads about the tool."""
    input_schema: dict[str, JsonValue] = Field(default_factory=lambda: {"type": "object"})
    """A JSON Schema of the arguments; the model's calls are checked against it before the turn
    waits."""


class ParentTurn(ContractModel):
    """`TurnRequest.parent`: set by the runtime on a sub-agent's turn, naming the turn that
    delegated it. Callers leave it unset."""

    model_config = ConfigDict(extra="forbid")
    workflow_id: str = Field(min_length=1)
    """The parent turn's workflow id."""
    call_id: str = Field(min_length=1)
    """The parent's tool call that started this turn."""
    depth: int = Field(ge=1)
    """Levels below the root turn (a root's child is 1)."""


class TurnRequest(ContractModel):
    """The input of `AgentTurnWorkflow` (`turnkeeper.TurnRequest`): one turn of an agent on a
    task. A request that does not validate fails the turn at once with `InvalidTurnRequest`."""

    model_config = ConfigDict(extra="forbid")
    agent: AgentSpec
    """Who answers: model, tools, limits."""
    task: TaskSpec
    """What to do, and within which constraints."""
    external_tools: list[ExternalToolSpec] = Field(default_factory=list)
    """Tools the caller runs itself: the turn waits for `submit_tool_result`."""
    history: list[Message] = Field(default_factory=list)
    """An earlier conversation by value (the `messages` of an earlier report); alternates
    `user` and `assistant`, starting with `user`. Not together with `history_ref`."""
    history_ref: str | None = Field(default=None, min_length=1)
    """The earlier conversation by reference: an earlier report's `conversation_ref` (a chain in
    the content store, rooted at the first turn's system prompt and tool definitions). A
    session passes it so that no turn carries the conversation through history by value."""
    history_compaction: CompactedHistory | None = None
    """With `history_ref` and `agent.compaction`: the earlier report's `history_compaction`, to
    go on from that compaction."""
    parent: ParentTurn | None = None
    """Of a sub-agent's turn: the turn that delegated it (set by the runtime). Its report then
    leaves `messages` out, so that the parent's history grows with its calls, not with their
    content (the `transcript` query and `conversation_ref` keep them)."""
    tenant: TenantName | None = None
    """Who the turn's spend is billed to (a name: letters, digits, `.`, `_`, `-`): its
    `TenantId` search attribute, its fair share of the workers, and its tenant's spend caps."""

    def summary(self) -> str:
        """One line for the Web UI's static summary: agent, task and the input's first line."""
        first_line = next((line for line in self.task.text().splitlines() if line.strip()), "")
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
    """Tokens of one model call, or summed over several (`AgentReport.usage`)."""

    input_tokens: int = 0
    """Input tokens, not counting cache reads and writes."""
    output_tokens: int = 0
    """Output tokens."""
    cache_read_tokens: int = 0
    """Input tokens read from the prompt cache."""
    cache_write_tokens: int = 0
    """Input tokens written to the prompt cache."""

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
        )


# The report's `outcome`s (declared beside the sub-agent records that repeat them).
Outcome = SubagentOutcome


class AgentReport(ContractModel):
    """The result of `AgentTurnWorkflow` (`turnkeeper.AgentReport`). A failed turn carries the
    same object, filled in as far as the turn got, as `details[0]` of its failure."""

    agent_id: str
    """The request's `agent.id`."""
    task_id: str
    """The request's `task.id`."""
    outcome: Outcome
    """`completed`: the model ended its turn; `max_tokens`: its last answer was cut by
    `agent.max_tokens`; `interrupted`: the `interrupt` update stopped it (the report so far);
    `failed` and `cancelled` appear in the partial reports of failures."""
    output: str = ""
    """The text of the last answer."""
    structured_output: JsonValue = None
    """With `agent.output_schema`: the parsed answer."""
    messages: list[Message] = Field(default_factory=list)
    """The turn's conversation (with `history_ref`: its own exchange only)."""
    usage: Usage = Field(default_factory=Usage)
    """Tokens over every model call, summary calls of compaction included."""
    cost_usd: float = 0.0
    """What the model calls cost, each priced by the model that answered; a lower bound when
    `unpriced_calls` is not 0."""
    priced_calls: list[PricedCall] = Field(default_factory=list)
    """Each model call's cost and who priced it (the pricing table, `agent.price`, the
    endpoint's own report, or nobody)."""
    unpriced_calls: int = 0
    """Model calls whose cost nobody knows: they are not in `cost_usd`."""
    llm_calls: int = 0
    """Model calls made, each counted once however often it was retried."""
    tool_calls: int = 0
    """Tool calls settled."""
    iterations: int = 0
    """Iterations of the loop."""
    duration_ms: int = 0
    """Wall-clock time from start to end, waits for humans included."""
    models_used: list[str] = Field(default_factory=list)
    """The `provider:model`s that answered."""
    decisions: list[DecisionRecord] = Field(default_factory=list)
    """Every approval decision."""
    conversation_ref: str | None = None
    """The stored conversation after this turn (a later turn's `history_ref` continues it); None
    when nothing was stored (no model call and no history_ref)."""
    history_compaction: CompactedHistory | None = None
    """Of a compacted turn: how its last request saw that conversation; pass it as the next
    turn's `history_compaction` (sessions do) to go on compacted."""
    budget_extensions: list[BudgetExtension] = Field(default_factory=list)
    """Every budget extension applied."""
    interventions: list[Intervention] = Field(default_factory=list)
    """Every `steer` and `interrupt` applied, in order."""
    subagents: list[SubagentRecord] = Field(default_factory=list)
    """Every sub-agent call, in the order they ended; `cost_usd`, `usage`, `llm_calls` and
    `tool_calls` above include what they spent."""
    tenant: str | None = None
    """The request's `tenant`."""
    started_by: str | None = None
    """The identity that started the turn, as the runtime recorded it (the HTTP API's signed-in
    token; the `StartedBy` search attribute); None when it was started without one."""
    schedule: str | None = None
    """The name of the schedule that started the turn (`turnkeeper schedule`; Temporal's
    `TemporalScheduledById` search attribute); None when no schedule started it."""
    skills_loaded: list[str] = Field(default_factory=list)
    """The skills whose instructions the model read: those of `agent.skills` marked `always`
    first, then each one `load_skill` loaded, once, in order (a sub-agent's are in its own
    report)."""
    guardrail_decisions: list[GuardrailDecision] = Field(default_factory=list)
    """Every verdict of `agent.guardrails`, enforced or not, in the order they were reached."""
    policy_decisions: list[PolicyDecision] = Field(
        default_factory=list, exclude_if=lambda decisions: not decisions
    )
    """With `agent.policy`: the policy decision on each tool call checked, in order (a call
    whose approver edited it is checked again and listed again)."""
    sandbox: SandboxReport | None = Field(default=None, exclude_if=lambda report: report is None)
    """The turn's sandbox folder after its last `run_python` or `run_shell` call (its files and
    the archive `turnkeeper sandbox get` reads); None: the turn ran none."""


class SubagentCancelled(ContractModel):
    """The `subagent_cancelled` signal a sub-agent's turn sends its parent as it is cancelled:
    its partial report, so that the parent's report counts what the child spent (a cancelled
    workflow's own end carries no details)."""

    workflow_id: str
    """The child turn that sends it."""
    report: AgentReport
    """Its partial report (outcome `cancelled`)."""


# AgentSpec names SubagentSpec, declared after it (SubagentSpec holds an AgentSpec).
AgentSpec.model_rebuild()
