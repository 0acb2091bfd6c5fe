"""The parts a turn is made of (workflows/turn_state.py): each owns a few fields that change
together and is the only code that changes them, as the SDK's `WorkflowStreamState` owns the
stream's. A change that spans parts (a sub-agent's spend, a budget wait that stops the clock) is
a method of `Turn`, which calls each part's own. No I/O, no clock: `now` is passed in.

Every part's fields keep the names they had when `Turn` held them all, so that the turn's
continue-as-new payload keeps its flat shape (`flat_parts`, `lifted_parts`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts.a2a import A2aAgentInfo, A2aTaskHandle
    from turnkeeper.contracts.activity_io import ModelCallResult, ToolTraits
    from turnkeeper.contracts.budget_extension import (
        BudgetExtension,
        BudgetKind,
        BudgetRequest,
        ExtendBudgetInput,
    )
    from turnkeeper.contracts.call_costs import PricedCall
    from turnkeeper.contracts.decision_signing import LEGACY_SIGNING_VERSION, SIGNING_VERSION
    from turnkeeper.contracts.mcp import McpToolSpec
    from turnkeeper.contracts.messages import Message
    from turnkeeper.contracts.rate_limits import CapacityWait
    from turnkeeper.contracts.sandbox_io import SandboxState
    from turnkeeper.contracts.signals import MAX_REFUSED_DECISIONS, DecisionRecord, RefusedDecision
    from turnkeeper.contracts.skill_io import SkillInfo
    from turnkeeper.contracts.steering import Intervention
    from turnkeeper.contracts.turn import AgentReport, SubagentRecord, Usage
    from turnkeeper.workflows.guardrails.decisions import GuardrailLog
    from turnkeeper.workflows.llm.context_window import ContextWindow
    from turnkeeper.workflows.policies.log import PolicyLog

# How much of a refused signal's own text the turn keeps: anyone may send one.
_REFUSED_FIELD_CHARS = 200
_REFUSED_REASON_CHARS = 600


class Spend(BaseModel):
    """What the turn has used: model and tool calls, tokens and dollars, its own and its
    sub-agents'. The budgets (workflows/budgets/checks.py) read it."""

    model_calls: int = 0
    tool_calls: int = 0
    tool_interactions: int = 0  # iterations in which the model asked for tools
    corrections: int = 0  # calls sent back to the model because their arguments did not fit
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float = 0.0
    # Each model call's cost and who priced it (compact: a few dozen bytes a call).
    priced_calls: list[PricedCall] = Field(default_factory=list)
    models_used: list[str] = Field(default_factory=list)

    def bill(self, iteration: int, result: ModelCallResult) -> None:
        """A model call of iteration `iteration` (its answer or a compaction summary) is paid."""
        self.model_calls += 1
        self.usage = self.usage + result.usage
        self.cost_usd += result.cost_usd
        self.priced_calls.append(priced_call(iteration, result))
        if result.model not in self.models_used:
            self.models_used.append(result.model)

    def add_subagent(self, record: SubagentRecord, usage: Usage) -> None:
        """A sub-agent's spend joins the turn's own (and so its budgets)."""
        self.usage = self.usage + usage
        self.cost_usd += record.cost_usd
        self.model_calls += record.llm_calls
        self.tool_calls += record.tool_calls

    def begin_tool_interaction(self) -> None:
        """The model asked for tools: one more of `max_tool_interactions` is used."""
        self.tool_interactions += 1

    def count_tool_call(self) -> None:
        """A tool call ran (a worker or MCP tool) or its caller submitted its result."""
        self.tool_calls += 1

    def count_correction(self) -> int:
        """The model's arguments did not fit a tool's schema and go back to it; how many times
        that has happened in this turn."""
        self.corrections += 1
        return self.corrections


class Tools(BaseModel):
    """What the turn learned of the tools it offers beyond its request: the worker tools'
    traits, the MCP tools found at the start, and the agent's skills (workflows/tools/skills.py)."""

    declared_approval: set[str] = Field(default_factory=set)  # tools that always need approval
    tool_traits: dict[str, ToolTraits] = Field(default_factory=dict)  # of worker tools
    traits_loaded: bool = False
    mcp_tools: dict[str, McpToolSpec] = Field(default_factory=dict)  # discovered at the start
    # The remote A2A agents offered (their cards read at the start), and the remote tasks the
    # turn's calls started, by task id, so that a later call can answer or follow up on one.
    a2a_agents: dict[str, A2aAgentInfo] = Field(default_factory=dict)
    a2a_tasks: dict[str, A2aTaskHandle] = Field(default_factory=dict)
    # `agent.skills` as the worker described them at the start, and the skills whose
    # instructions the model has read (the `always` ones first).
    skills: list[SkillInfo] = Field(default_factory=list)
    skills_loaded: list[str] = Field(default_factory=list)
    # The sandbox folder after the last `run_python`/`run_shell` call (workflows/tools/sandbox.py).
    sandbox: SandboxState | None = None

    def learned_from(self, result: ModelCallResult) -> None:
        """What a model call's result says of the worker's tools."""
        self.declared_approval.update(result.approval_required)
        self.tool_traits.update({traits.name: traits for traits in result.tool_traits})

    def learned_tool_traits(self) -> None:
        """Tool traits came with a call that offered tools: later calls need not ask."""
        self.traits_loaded = True

    def discovered_mcp_tools(
        self, specs: dict[str, McpToolSpec], traits: dict[str, ToolTraits]
    ) -> None:
        """The MCP tools the turn offers, found at its start, and how each one runs."""
        self.mcp_tools = specs
        self.tool_traits.update(traits)

    def described_a2a_agents(self, agents: list[A2aAgentInfo], traits: list[ToolTraits]) -> None:
        """The remote agents the turn offers, found at its start, and how their calls run."""
        self.a2a_agents = {agent.name: agent for agent in agents}
        self.tool_traits.update({t.name: t for t in traits})

    def followed_a2a_task(self, task: A2aTaskHandle) -> None:
        """A call started or continued `task`, which is now in the state it says."""
        self.a2a_tasks[task.task_id] = task

    def described_skills(self, skills: list[SkillInfo], always: set[str]) -> None:
        """The worker described the agent's skills: those `always` loaded are read already."""
        self.skills = list(skills)
        self.skills_loaded = [skill.name for skill in skills if skill.name in always]

    def saved_sandbox(self, state: SandboxState) -> None:
        """A sandbox call left the turn's folder as `state`; the next call starts from it."""
        self.sandbox = state

    def loaded_skill(self, name: str) -> None:
        """`load_skill` returned the instructions of `name`."""
        if name not in self.skills_loaded:
            self.skills_loaded.append(name)


class Approvals(BaseModel):
    """Who decided the turn's calls, the signals it refused, and the signed '*' decisions it
    applied, checked in the signing format this run verifies."""

    decisions: list[DecisionRecord] = Field(default_factory=list)
    refused_decisions: list[RefusedDecision] = Field(default_factory=list)  # the latest only
    refused_decisions_dropped: int = 0  # older refusals pushed out of `refused_decisions`
    # The applied signed '*' decisions (`approvals/signatures.spent_key`): their signatures' text in
    # runs that verify signing format 1, the digests of what was signed in format 2.
    spent_signatures: list[str] = Field(default_factory=list)
    spent_decisions: list[str] = Field(default_factory=list)
    # Not carried (excluded): each run asks (signed_decisions.signing_version) as it begins.
    # From format 3 signatures bind the turn's first run id, None before.
    signing_version: int = Field(default=SIGNING_VERSION, exclude=True)
    signed_run_id: str | None = Field(default=None, exclude=True)

    def record(self, decision: DecisionRecord) -> None:
        self.decisions.append(decision)

    def refuse(
        self, call_id: str, approver: str, reason: str, now: datetime, signal: str = "approve"
    ) -> None:
        """Keeps an ignored signal (`approve`, unless `signal` names another) for the status
        query. Fields are cut short and the oldest refusals drop out, so a flood of forged
        signals cannot grow the turn's state; the count of those dropped stays, so a flood cannot
        hide the attempts it pushed out.

        Replay: only the status query reads the count; no command depends on it, so histories
        recorded before it existed replay unchanged and need no `workflow.patched` (a carry
        without the field reads as 0)."""
        refused = RefusedDecision(
            call_id=call_id[:_REFUSED_FIELD_CHARS],
            approver=approver[:_REFUSED_FIELD_CHARS],
            reason=reason[:_REFUSED_REASON_CHARS],
            at=now,
            signal=signal,
        )
        kept = [*self.refused_decisions, refused]
        self.refused_decisions_dropped += max(0, len(kept) - MAX_REFUSED_DECISIONS)
        self.refused_decisions = kept[-MAX_REFUSED_DECISIONS:]

    def verify_signatures_as(self, version: int, first_run_id: str | None) -> None:
        """This run verifies signing format `version`, from its first decision to its last,
        bound to the turn's first run `first_run_id` (None: the format binds no run)."""
        self.signing_version = version
        self.signed_run_id = first_run_id

    def spend_star(self, key: str) -> None:
        """Remembers an applied signed '*' decision, so that a copy of it decides nothing."""
        self.spent_stars().append(key)

    def spent_stars(self) -> list[str]:
        """The spent set of this run's signing format (format 1 signatures never verify in a
        format 2 run, so its entries need not be compared there)."""
        if self.signing_version == LEGACY_SIGNING_VERSION:
            return self.spent_signatures
        return self.spent_decisions


class BudgetWaits(BaseModel):
    """The extensions a human granted, and the request the turn waits on while it waits for one
    (state `awaiting_budget`)."""

    budget_request: BudgetRequest | None = None
    budget_requests: int = 0
    budget_extensions: list[BudgetExtension] = Field(default_factory=list)

    def ask(self, budget: BudgetKind, message: str, now: datetime) -> BudgetRequest:
        """A new request for a human to extend `budget`."""
        self.budget_requests += 1
        self.budget_request = BudgetRequest(
            number=self.budget_requests, budget=budget, message=message, since=now
        )
        return self.budget_request

    def grant(self, extension: ExtendBudgetInput, signed: bool, now: datetime) -> BudgetExtension:
        """Applies `extension` to the request the turn waits on, and ends the request."""
        request = self.budget_request
        assert request is not None, "an extension is validated against a waiting request"
        granted = BudgetExtension(
            request=request.number,
            budget=request.budget,
            cost_usd=extension.cost_usd,
            time_ms=extension.time_ms,
            iterations=extension.iterations,
            tool_interactions=extension.tool_interactions,
            approver=extension.approver,
            reason=extension.reason,
            signed=signed,
            at=now,
        )
        self.budget_extensions.append(granted)
        self.budget_request = None
        return granted

    def withdraw(self) -> None:
        """The turn waits for no extension any more (none came, or it ended)."""
        self.budget_request = None


class Compaction(BaseModel):
    """What compaction keeps (agent.compaction): the window model calls see, the conversation a
    turn with `history_ref` continues, and where the whole (uncompacted) conversation is stored."""

    context_window: ContextWindow = Field(default_factory=ContextWindow)
    # A compacting turn with history_ref: the conversation it continues, read from the store so
    # that compaction can leave its oldest exchanges out too. Never in the report or transcript.
    earlier: list[Message] = Field(default_factory=list)
    earlier_loaded: bool = False
    # The stored conversation as it stood (uncompacted) when the turn's requests first began to
    # differ from it, and how many of this turn's messages it holds: the turn's whole
    # conversation is stored from there at the end.
    whole_ref: str | None = None
    whole_count: int = 0
    whole_recorded: bool = False

    def compacted(
        self, cut: int, summary: str | None, whole_ref: str | None, whole_count: int
    ) -> None:
        """This turn compacted its conversation: `cut` as `continued` says, counted."""
        self.continued(cut, summary, whole_ref, whole_count)
        self.context_window.compactions += 1

    def continued(
        self, cut: int, summary: str | None, whole_ref: str | None, whole_count: int
    ) -> None:
        """Model calls see the conversation without its messages 1..cut (replaced by `summary`,
        or by a note). The first cut remembers the whole conversation as it stood: stored under
        `whole_ref`, holding `whole_count` of this turn's messages."""
        if not self.whole_recorded:
            self.whole_ref = whole_ref
            self.whole_count = whole_count
            self.whole_recorded = True
        self.context_window.cut = cut
        self.context_window.summary = summary

    def load_earlier(self, messages: list[Message]) -> None:
        """The conversation this turn continues, read from the store so that compaction can
        leave its oldest exchanges out too."""
        self.earlier = messages
        self.earlier_loaded = True
        self.context_window.anchor = len(messages)

    def measured(self, counted_tokens: int, estimated_tokens: int) -> None:
        """A model call's input as the provider counted it, beside our estimate of what was
        sent: later estimates add what the provider counts beyond it."""
        self.context_window.measured(counted_tokens, estimated_tokens)


class Steers(BaseModel):
    """Steers and the interrupt as applied (the audit trail), the steers not yet in the
    conversation (they join it before the next model call), and the digests of the signed
    steers applied, so that a copy of one steers nothing. Carried: a steer that arrives just
    before a continue-as-new joins the next run's first model call."""

    interventions: list[Intervention] = Field(default_factory=list)
    queued_steers: list[Intervention] = Field(default_factory=list)
    spent_steers: list[str] = Field(default_factory=list)

    def queue(self, steer: Intervention, spent: str | None) -> None:
        """A `steer` was accepted: it joins the conversation at the next safe point."""
        self.interventions.append(steer)
        self.queued_steers.append(steer)
        if spent is not None:
            self.spent_steers.append(spent)

    def take_queued(self) -> list[Intervention]:
        """The queued steers, which the caller puts into the conversation now."""
        taken, self.queued_steers = self.queued_steers, []
        return taken

    def record(self, intervention: Intervention) -> None:
        """An accepted interrupt or cancel: the report's `interventions` say who and why."""
        self.interventions.append(intervention)


class Subagents(BaseModel):
    """Sub-agent calls: how many each sub-agent name has had (its next child is `<name>-<k+1>`),
    and every one that ended, with what it spent."""

    subagent_calls: dict[str, int] = Field(default_factory=dict)
    subagents: list[SubagentRecord] = Field(default_factory=list)
    # Not carried (excluded): the partial reports of sub-agents cancelled with this turn, told
    # by their `subagent_cancelled` signals while it waits for them to end.
    cancelled_children: dict[str, AgentReport] = Field(default_factory=dict, exclude=True)

    def number_call(self, name: str) -> int:
        """A call of sub-agent `name` begins; its number k among that sub-agent's calls."""
        self.subagent_calls[name] = self.subagent_calls.get(name, 0) + 1
        return self.subagent_calls[name]

    def made_call(self, name: str, k: int) -> bool:
        """Whether this turn has begun a k-th call of sub-agent `name`."""
        return 1 <= k <= self.subagent_calls.get(name, 0)

    def record(self, record: SubagentRecord) -> None:
        self.subagents.append(record)

    def cancelled(self, workflow_id: str, partial: AgentReport) -> None:
        """The child `workflow_id` was cancelled with this turn; its partial report."""
        self.cancelled_children[workflow_id] = partial


class FleetWaits(BaseModel):
    """Time model calls waited for fleet capacity (TURNKEEPER_RATE_LIMITS), and what the call
    in flight waits for while it does (told by the `capacity_wait` signal)."""

    capacity_wait_ms: int = 0
    capacity_awaited: CapacityWait | None = None

    def awaiting(self, wait: CapacityWait, now: datetime) -> None:
        """The model call in flight waits for capacity, since `now`."""
        self.capacity_awaited = wait.model_copy(update={"since": now})

    def call_over(self) -> None:
        """The model call is back or failed: it waits for nothing."""
        self.capacity_awaited = None

    def waited(self, waited_ms: int) -> None:
        """A model call is back: its wait for fleet capacity is over and counted."""
        self.capacity_wait_ms += waited_ms
        self.capacity_awaited = None


class Cooldowns(BaseModel):
    """Fallback-chain models that exhausted their attempts, and when they may be tried again."""

    model_cooldowns: dict[str, datetime] = Field(default_factory=dict)

    def cool_down(self, model: str, until: datetime) -> None:
        """Passes `model` over in the fallback chain until `until`."""
        self.model_cooldowns[model] = until

    def cooling_until(self, model: str, now: datetime) -> datetime | None:
        until = self.model_cooldowns.get(model)
        return until if until is not None and until > now else None

    def answered(self, model: str) -> None:
        self.model_cooldowns.pop(model, None)


# The parts of a turn, by the name `Turn` holds each under. No name here is a key of the flat
# payload, so a part given whole (as `Turn.resume` does) is told apart from flat keys.
PARTS: dict[str, type[BaseModel]] = {
    "spend": Spend,
    "tools": Tools,
    "approvals": Approvals,
    "budget": BudgetWaits,
    "compaction": Compaction,
    "steers": Steers,
    "children": Subagents,
    "fleet": FleetWaits,
    "fallback": Cooldowns,
    "guardrails": GuardrailLog,
    "policies": PolicyLog,
}


def lifted_parts(data: Any) -> Any:
    """Flat payload keys gathered into the part that owns each: what a turn carried by any
    build, before or after it was made of parts, loads as. A part given whole stays whole."""
    if not isinstance(data, dict):
        return data
    data = dict(data)
    for name, part in PARTS.items():
        if name not in data:
            data[name] = {key: data.pop(key) for key in part.model_fields if key in data}
    return data


def flat_parts(dumped: dict[str, Any]) -> dict[str, Any]:
    """A dumped turn with each part's keys back at the top, where they were before parts."""
    flat: dict[str, Any] = {}
    for key, value in dumped.items():
        if key in PARTS:
            flat.update(value)
        else:
            flat[key] = value
    return flat


def priced_call(iteration: int, result: ModelCallResult) -> PricedCall:
    """What the report says of one call's cost. A result from a worker before cost sources
    says nothing: it was priced by the table (or `agent.price`) when it cost anything."""
    priced_by = result.priced_by or ("price_table" if result.cost_usd else "unknown")
    cost = None if priced_by == "unknown" else round(result.cost_usd, 10)
    return PricedCall(iteration=iteration, model=result.model, cost_usd=cost, priced_by=priced_by)
